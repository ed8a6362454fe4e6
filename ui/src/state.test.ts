import { describe, expect, it } from "vitest";
import type { EvalDto } from "./api";
import { layoutBars, METRICS } from "./chart";
import { pickLanguage, setLanguage, t } from "./i18n";
import { applyProgress, asCommandError, formatBytes, idle, nextNotice, OpenConversation, questionLanguage, RateMeter, secondsLeft, shownNotice, visibleRows } from "./state";

describe("index progress", () => {
  it("counts files and ends idle", () => {
    let s = applyProgress(idle, { type: "started", files_to_index: 2, queued: ["a.md", "b.md"] });
    expect(s.active).toBe(true);
    s = applyProgress(s, { type: "file_done", path: "a.md", error: null, files_done: 1, files_total: 2 });
    expect([s.done, s.total, s.lastFile]).toEqual([1, 2, "a.md"]);
    s = applyProgress(s, { type: "finished", documents: 2, chunks: 5, embedded: 5, errors: 0 });
    expect(s).toEqual(idle);
  });

  it("a sync with nothing to do is not shown as active", () => {
    expect(applyProgress(idle, { type: "started", files_to_index: 0, queued: [] }).active).toBe(false);
  });
});

describe("formatting", () => {
  it("formats sizes", () => {
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(2048)).toBe("2.0 KB");
    expect(formatBytes(50 * 1024 * 1024)).toBe("50 MB");
  });
});

describe("command errors", () => {
  it("keeps the kind the UI branches on", () => {
    expect(asCommandError({ kind: "not_ready", message: "opening" }).kind).toBe("not_ready");
    expect(asCommandError("boom")).toEqual({ kind: "internal", message: "boom" });
  });
});

import { isImagePath, splitCitations } from "./state";

describe("citations", () => {
  it("splits markers out of the text", () => {
    expect(splitCitations("Seeds [S1] and pellets [S2, S3].")).toEqual([
      { text: "Seeds " }, { cite: "S1" }, { text: " and pellets " }, { cite: "S2" }, { cite: "S3" }, { text: "." },
    ]);
  });

  it("leaves markup as plain text (it is inserted with textContent)", () => {
    const parts = splitCitations('<img src=x onerror=alert(1)> [S1] <svg onload=alert(2)>');
    expect(parts[0]).toEqual({ text: "<img src=x onerror=alert(1)> " });
    expect(parts[1]).toEqual({ cite: "S1" });
    expect(splitCitations("[note] [S] [s1]")).toEqual([{ text: "[note] [S] [s1]" }]);
  });
});

describe("drops", () => {
  it("routes images to identification and documents to import", () => {
    expect(isImagePath("/tmp/Bird.JPG")).toBe(true);
    expect(isImagePath("/tmp/notes.md")).toBe(false);
  });
});

describe("languages", () => {
  it("follow the setting, else the system", () => {
    expect(pickLanguage(null, "zh-CN")).toBe("zh");
    expect(pickLanguage(null, "en-US")).toBe("en");
    expect(pickLanguage("en", "zh-TW")).toBe("en");
  });

  it("fill placeholders in both languages", () => {
    setLanguage("zh");
    expect(t("knowledge.indexing", { done: 3, total: 20 })).toBe("正在索引 3 / 20");
    setLanguage("en");
    expect(t("knowledge.indexing", { done: 3, total: 20 })).toBe("indexing 3 of 20");
  });
});

describe("evaluation chart", () => {
  const result = (name: string, value: number): EvalDto => ({
    name,
    metrics: Object.fromEntries(METRICS.map((m) => [m, value])) as EvalDto["metrics"],
    by_lang: {},
    misses: [],
    ms_per_query: 1,
    refusal: null,
    answers: {},
  });

  it("lays out one bar per metric and configuration, height proportional to the value", () => {
    const bars = layoutBars([result("bm25", 0.5), result("hybrid", 1)], 600, 200);
    expect(bars).toHaveLength(METRICS.length * 2);
    const [a, b] = bars;
    expect([a.config, a.height, a.y]).toEqual(["bm25", 100, 100]);
    expect([b.config, b.height, b.y]).toEqual(["hybrid", 200, 0]);
    expect(b.x).toBeGreaterThan(a.x);
    expect(bars.every((bar) => bar.x + bar.width <= 600)).toBe(true);
  });
});

describe("download speed and time left", () => {
  it("measures from the first report, after two seconds, and starts again after a pause", () => {
    let now = 0;
    const meter = new RateMeter(() => now);
    expect(meter.update(1_000_000)).toBeNull();
    now = 1000;
    expect(meter.update(2_000_000)).toBeNull();
    now = 4000;
    expect(meter.update(5_000_000)).toBe(1_000_000);
    meter.reset();
    expect(meter.update(5_000_000)).toBeNull();
  });

  it("turns bytes left into seconds, unknown without a speed", () => {
    expect(secondsLeft(10_000_000, 1_000_000)).toBe(10);
    expect(secondsLeft(1, 1_000_000)).toBe(1);
    expect(secondsLeft(10, null)).toBeNull();
    expect(secondsLeft(10, 0)).toBeNull();
  });
});

describe("question language", () => {
  it("is Chinese with any CJK character, else English", () => {
    expect(questionLanguage("它吃什么？")).toBe("zh");
    expect(questionLanguage("What does the 玄凤 eat?")).toBe("zh");
    expect(questionLanguage("What do cockatiels eat?")).toBe("en");
  });
});

describe("the notice queue", () => {
  it("shows the most important notice, or the one the person moved to while it lasts", () => {
    expect(shownNotice([], null)).toBeNull();
    expect(shownNotice(["first-run", "language"], null)).toBe("first-run");
    expect(shownNotice(["first-run", "language"], "language")).toBe("language");
    // The chosen one went away (applied or dismissed): back to the first.
    expect(shownNotice(["first-run"], "language")).toBe("first-run");
  });

  it("moves to the next notice and wraps round", () => {
    expect(nextNotice(["a", "b", "c"], "a")).toBe("b");
    expect(nextNotice(["a", "b", "c"], "c")).toBe("a");
    expect(nextNotice(["a", "b"], "gone")).toBe("a");
    expect(nextNotice([], "a")).toBeNull();
  });
});

describe("the virtual document list", () => {
  it("draws the rows in view and a margin each side, never past the ends", () => {
    // 32-pixel rows in a 400-pixel view scrolled to row 100 of 5000.
    expect(visibleRows(3200, 400, 32, 5000, 10)).toEqual([90, 124]);
    expect(visibleRows(0, 400, 32, 5000, 10)).toEqual([0, 24]);
    expect(visibleRows(0, 400, 32, 7, 10)).toEqual([0, 7]);
    // Scrolled past the end (the list shrank): the last rows, not an empty range.
    expect(visibleRows(1e6, 400, 32, 50, 10)).toEqual([40, 50]);
    // A list not laid out yet (no height) still draws some rows.
    expect(visibleRows(0, 0, 32, 50, 10)[1]).toBeGreaterThan(10);
  });
});

describe("the open conversation", () => {
  it("takes a reply's conversation while nothing else was opened", () => {
    const open = new OpenConversation();
    const ticket = open.ask();
    expect(open.settle(ticket, 4)).toBe(true);
    expect(open.id).toBe(4);
  });

  it("drops a reply that comes back after another collection or chat was opened", () => {
    const open = new OpenConversation();
    open.open(2);
    const ticket = open.ask();
    open.open(null); // switched collection while the answer streamed
    expect(open.settle(ticket, 2)).toBe(false);
    expect(open.id).toBe(null);
    const later = open.ask();
    expect(open.settle(later, 7)).toBe(true);
    expect(open.id).toBe(7);
  });
});

// @vitest-environment jsdom
// Markdown rendering: formatting survives, citations become buttons, and the
// shared XSS corpus (tests/xss/payloads.txt) leaves no script, handler,
// dangerous element or javascript:/data: URL behind.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { boundNesting, purify, renderMarkdown } from "./markdown";

const payloads = readFileSync(resolve(__dirname, "../../tests/xss/payloads.txt"), "utf8")
  .split("\n")
  .filter((line) => line && !line.startsWith("#"))
  .map((line) => line.replaceAll("\\n", "\n"));

function render(markdown: string) {
  const target = document.createElement("div");
  const opened: string[] = [];
  renderMarkdown(target, markdown, {
    citation: (label) => Object.assign(document.createElement("button"), { className: "cite", textContent: `[${label}]` }),
    openLink: (url) => opened.push(url),
  });
  return { target, opened };
}

function dangerous(root: Element): string[] {
  const found: string[] = [];
  for (const node of Array.from(root.querySelectorAll("*"))) {
    const tag = node.tagName.toLowerCase();
    if (["script", "iframe", "object", "embed", "svg", "math", "style", "img", "form", "input", "meta", "link", "base", "video", "audio", "template"].includes(tag))
      found.push(`<${tag}>`);
    for (const attr of Array.from(node.attributes)) {
      if (attr.name.startsWith("on") || attr.name === "style" || attr.name === "srcdoc") found.push(`${tag}[${attr.name}]`);
      if (/^\s*(javascript|data|vbscript):/i.test(attr.value)) found.push(`${tag}[${attr.name}=${attr.value}]`);
    }
  }
  return found;
}

describe("markdown rendering", () => {
  it("renders a list nested thousands deep flat past eight levels", () => {
    const stairs = Array.from({ length: 4000 }, (_, i) => `${" ".repeat(2 * i)}- item ${i}`).join("\n");
    const oneLine = `${"- ".repeat(20000)}deep`;
    expect(boundNesting("  - a\n    1. b\n> > c")).toBe("  - a\n    1. b\n> > c");
    for (const markdown of [stairs, oneLine]) {
      const { target } = render(markdown);
      expect(target.querySelectorAll("ul ul ul ul ul ul ul ul ul ul").length).toBe(0);
      expect(target.textContent).toContain(markdown === stairs ? "item 3999" : "deep");
    }
  });

  it("keeps formatting and turns citation markers into buttons", () => {
    const { target } = render("**Seeds** and *pellets* [S1], see `code [S9]`.\n\n- one [S2, S3]");
    expect(target.querySelector("strong")?.textContent).toBe("Seeds");
    expect(Array.from(target.querySelectorAll("button.cite")).map((b) => b.textContent)).toEqual(["[S1]", "[S2]", "[S3]"]);
    expect(target.querySelector("code")?.textContent).toBe("code [S9]");
  });

  it("leaves an answer's links and images inert, their addresses shown", () => {
    const target = document.createElement("div");
    const markdown = "Descale it, see [the guide](https://evil.example/login), ![logo](https://evil.example/p.png) or https://evil.example/bare [S1]";
    renderMarkdown(target, markdown, { citation: (label) => Object.assign(document.createElement("button"), { textContent: `[${label}]` }) });
    expect(target.querySelectorAll("a, img").length).toBe(0);
    expect(target.textContent).toContain("the guide <https://evil.example/login>");
    expect(target.textContent).toContain("logo <https://evil.example/p.png>");
    expect(target.textContent).toContain("https://evil.example/bare");
    expect(target.querySelectorAll("button").length).toBe(1);
  });

  it("opens only http(s) links, on click, through the hook", () => {
    const { target, opened } = render("[site](https://example.com/a) and [bad](javascript:alert(1))");
    const links = Array.from(target.querySelectorAll("a"));
    expect(links.every((a) => !a.hasAttribute("href"))).toBe(true);
    links.forEach((a) => a.dispatchEvent(new MouseEvent("click", { bubbles: true, cancelable: true })));
    expect(opened).toEqual(["https://example.com/a"]);
  });

  it("shows raw HTML from documents as text", () => {
    const { target } = render("<b>bold?</b>");
    expect(target.querySelector("b")).toBeNull();
    expect(target.textContent).toContain("<b>bold?</b>");
  });

  it(`neutralises every payload of the XSS corpus (${payloads.length})`, () => {
    expect(payloads.length).toBeGreaterThanOrEqual(100);
    for (const payload of payloads) {
      const { target } = render(payload);
      expect(dangerous(target), payload).toEqual([]);
      // The second layer alone, on the payload as raw HTML.
      const template = document.createElement("template");
      template.innerHTML = purify(payload);
      const wrapper = document.createElement("div");
      wrapper.append(template.content);
      expect(dangerous(wrapper), payload).toEqual([]);
    }
  });
});

// Pure UI state logic (no DOM, no Tauri), unit-tested with Vitest.

import type { ErrorDto, ErrorKind, ProgressDto } from "./ipc";

/** The `index-progress` event (generated from the shell's `ProgressDto`). */
export type Progress = ProgressDto;

export interface IndexingState {
  active: boolean;
  done: number;
  total: number;
  lastFile: string | null;
}

export const idle: IndexingState = { active: false, done: 0, total: 0, lastFile: null };

/** Folds one index-progress event into the indexing state. */
export function applyProgress(_state: IndexingState, event: Progress): IndexingState {
  switch (event.type) {
    case "started":
      return { active: event.files_to_index > 0, done: 0, total: event.files_to_index, lastFile: null };
    case "file_done":
      return { active: true, done: event.files_done, total: event.files_total, lastFile: event.path };
    case "finished":
      return { ...idle };
  }
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KB", "MB", "GB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** An error from a command (`ErrorDto`: a kind the UI branches on, and a
 *  message); anything else is "internal". */
export function asCommandError(e: unknown): ErrorDto {
  if (e && typeof e === "object" && "kind" in e && "message" in e) {
    return { kind: String((e as ErrorDto).kind) as ErrorKind, message: String((e as ErrorDto).message) };
  }
  return { kind: "internal", message: String(e) };
}

/** A piece of an answer: plain text, or a citation marker like [S1]. */
export type AnswerPart = { text: string } | { cite: string };

/** Splits an answer into text and citation markers ([S1], [S1, S2]). */
export function splitCitations(answer: string): AnswerPart[] {
  const parts: AnswerPart[] = [];
  const pattern = /\[(S\d+(?:\s*,\s*S\d+)*)\]/g;
  let last = 0;
  for (const match of answer.matchAll(pattern)) {
    if (match.index! > last) parts.push({ text: answer.slice(last, match.index) });
    for (const label of match[1].split(",")) parts.push({ cite: label.trim() });
    last = match.index! + match[0].length;
  }
  if (last < answer.length) parts.push({ text: answer.slice(last) });
  return parts;
}

const IMAGE_EXTENSIONS = ["jpg", "jpeg", "png", "webp", "gif", "bmp"];

/** Whether a dropped path is an image (identify) rather than a document (import). */
export function isImagePath(path: string): boolean {
  const ext = path.split(".").pop()?.toLowerCase() ?? "";
  return IMAGE_EXTENSIONS.includes(ext);
}

/** Whitespace-insensitive form used to compare page text with a passage. */
export function squeeze(text: string): string {
  return text.replace(/\s+/g, "").toLowerCase();
}

/** The pieces of page text that belong to the passage (long enough to mean something). */
export function piecesOfPassage<T extends { str: string }>(pieces: T[], passage: string): T[] {
  const wanted = squeeze(passage);
  return pieces.filter((p) => {
    const piece = squeeze(p.str);
    return piece.length >= 3 && wanted.includes(piece);
  });
}

/** A download's speed, measured from the first report after a (re)start. */
export class RateMeter {
  private start: { at: number; bytes: number } | null = null;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Folds in the bytes done so far; bytes per second once 2 s have passed, else null. */
  update(bytes: number): number | null {
    const at = this.now();
    if (!this.start || bytes < this.start.bytes) this.start = { at, bytes };
    const seconds = (at - this.start.at) / 1000;
    return seconds >= 2 ? (bytes - this.start.bytes) / seconds : null;
  }

  reset() {
    this.start = null;
  }
}

/** Whole seconds left at `bytesPerSecond` (null when the speed is not known or zero). */
export function secondsLeft(remainingBytes: number, bytesPerSecond: number | null): number | null {
  if (!bytesPerSecond || bytesPerSecond <= 0) return null;
  return Math.ceil(Math.max(0, remainingBytes) / bytesPerSecond);
}

/** A question's language as the engine tells it: Chinese when it has CJK characters, else English. */
export function questionLanguage(text: string): "zh" | "en" {
  return /[\u3400-\u9fff\uf900-\ufaff]/.test(text) ? "zh" : "en";
}

/** The notice the queue shows: the one the person moved to, while it is
 * still there; else the first (most important) of those present. */
export function shownNotice(present: string[], chosen: string | null): string | null {
  return chosen !== null && present.includes(chosen) ? chosen : (present[0] ?? null);
}

/** The notice after `current` in the queue, wrapping round. */
export function nextNotice(present: string[], current: string | null): string | null {
  if (!present.length) return null;
  const at = current === null ? -1 : present.indexOf(current);
  return present[(at + 1) % present.length];
}

/** The rows a virtual list draws: those in view, with `overscan` more each side. */
export function visibleRows(scrollTop: number, viewHeight: number, rowHeight: number, rows: number, overscan: number): [number, number] {
  const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
  const inView = Math.ceil(Math.max(viewHeight, rowHeight) / rowHeight) + 1;
  const start = Math.max(0, Math.min(first, rows) - overscan);
  return [start, Math.min(rows, first + inView + overscan)];
}

/**
 * The conversation open in the chat. A question's reply names the
 * conversation it was stored in; once the person has moved on (another
 * conversation, a new chat, another collection), a reply still coming
 * belongs to what was open when it was asked and must not reopen it.
 */
export class OpenConversation {
  private generation = 0;
  id: number | null = null;

  /** Opens conversation `id` (`null`: a new chat); replies still coming are dropped. */
  open(id: number | null) {
    this.generation += 1;
    this.id = id;
  }

  /** What a request started now hands back to [`settle`]. */
  ask(): number {
    return this.generation;
  }

  /** Records the conversation `id` a reply was stored in, unless the person
   *  moved on since the request (`ticket`); whether the reply is still wanted. */
  settle(ticket: number, id: number | null): boolean {
    if (ticket !== this.generation) return false;
    this.id = id;
    return true;
  }
}

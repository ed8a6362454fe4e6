// Markdown from documents and from the language model, rendered safely:
// raw HTML in the source is shown as text, the rendered HTML is sanitised
// by DOMPurify (a small tag allow-list, http(s) links only), links carry no
// href (a click asks the shell to open them in the browser), and citation
// markers like [S1] become buttons built from text, never from markup. An
// answer's words are never active: rendered without `openLink`, a link is
// plain text with its address shown, and an image is its alt text and address.
import DOMPurify from "dompurify";
import { Marked } from "marked";
import { splitCitations } from "./state";

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    image: ({ text, href }) => escapeHtml(href ? `${text} <${href}>` : text),
  },
});

const ALLOWED_TAGS = [
  "p", "br", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li",
  "h1", "h2", "h3", "h4", "h5", "h6", "a", "table", "thead", "tbody", "tr", "th", "td", "hr",
];

/** List and quote levels kept, and the indentation kept, on one line. */
const MAX_NESTING = 8;
const MAX_INDENT = 2 * MAX_NESTING;

/**
 * `markdown` with every line's nesting bounded: at most MAX_NESTING list or
 * quote markers open a line and at most MAX_INDENT columns indent it, so a
 * document of thousands of nested items renders flat past that depth
 * instead of exhausting the parser's stack or the page.
 */
export function boundNesting(markdown: string): string {
  return markdown
    .split("\n")
    .map((line) => {
      const indent = /^[ \t]*/.exec(line)![0];
      let rest = line.slice(indent.length);
      let markers = "";
      let depth = 0;
      for (let m = /^(?:[-*+>]|\d{1,9}[.)])(?:[ \t]+|$)/.exec(rest); m; m = /^(?:[-*+>]|\d{1,9}[.)])(?:[ \t]+|$)/.exec(rest)) {
        if (depth < MAX_NESTING) markers += m[0];
        depth += 1;
        rest = rest.slice(m[0].length);
      }
      return indent.slice(0, MAX_INDENT) + markers + rest;
    })
    .join("\n");
}

/** Markdown → sanitised HTML string (no citation handling). */
export function sanitisedHtml(markdown: string): string {
  return purify(marked.parse(boundNesting(markdown), { async: false }));
}

/** HTML → the allowed subset (the second layer: raw HTML is already escaped). */
export function purify(html: string): string {
  return DOMPurify.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR: ["href", "title"],
    ALLOWED_URI_REGEXP: /^https?:\/\//i,
  });
}

export interface RenderHooks {
  /** Builds the element for a citation marker (e.g. a button for "S1"). */
  citation: (label: string) => HTMLElement;
  /**
   * Called when a link is clicked (only http(s) links survive sanitising).
   * Absent for text a model wrote or chose: its links stay inert text.
   */
  openLink?: (url: string) => void;
}

/** Renders markdown into `target`, replacing its content. */
export function renderMarkdown(target: HTMLElement, markdown: string, hooks: RenderHooks): void {
  const template = document.createElement("template");
  template.innerHTML = sanitisedHtml(markdown);
  const content = template.content;
  for (const link of Array.from(content.querySelectorAll("a"))) {
    const href = link.getAttribute("href") ?? "";
    link.removeAttribute("href");
    if (!hooks.openLink) {
      const label = link.textContent ?? "";
      link.replaceWith(document.createTextNode(href && label !== href ? `${label} <${href}>` : label));
      continue;
    }
    const openLink = hooks.openLink;
    if (/^https?:\/\//i.test(href)) {
      link.dataset.href = href;
      link.classList.add("link");
      link.title = href;
      link.addEventListener("click", (event) => {
        event.preventDefault();
        openLink(href);
      });
    }
  }
  replaceCitations(content, hooks.citation);
  target.replaceChildren(content);
}

/** Swaps [S1]-style markers in text nodes (outside code) for elements. */
function replaceCitations(root: Node, citation: (label: string) => HTMLElement) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes: Text[] = [];
  while (walker.nextNode()) nodes.push(walker.currentNode as Text);
  for (const node of nodes) {
    if (node.parentElement?.closest("code, pre")) continue;
    const parts = splitCitations(node.data);
    if (!parts.some((p) => "cite" in p)) continue;
    const pieces = parts.map((p) => ("cite" in p ? citation(p.cite) : document.createTextNode(p.text)));
    node.replaceWith(...pieces);
  }
}

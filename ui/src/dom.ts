// Small DOM helpers shared by the views: lookups, elements built from text,
// toasts and an in-app confirmation dialog.
import { asCommandError } from "./state";

export const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

/** An element whose content is plain text (never parsed as HTML). */
export function el(tag: string, text?: string, className?: string): HTMLElement {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

export function button(label: string, onClick: () => void, className = "small"): HTMLButtonElement {
  const node = el("button", label, className) as HTMLButtonElement;
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

let toastTimer: number | undefined;

/** Shows a message for a few seconds (errors show their reason). */
export function toast(message: string, kind: "info" | "error" = "info") {
  const box = $("toast");
  box.textContent = message;
  box.className = kind;
  box.hidden = false;
  window.clearTimeout(toastTimer);
  toastTimer = window.setTimeout(() => (box.hidden = true), 6000);
}

/** Toasts a failed command with its message (callers branch on kind first). */
export function toastError(e: unknown) {
  toast(asCommandError(e).message, "error");
}

/** Asks before a destructive action, inside the window (no native dialog). */
export function confirmAction(question: string, confirmLabel: string): Promise<boolean> {
  return new Promise((resolve) => {
    const dialog = document.createElement("dialog");
    dialog.className = "confirm";
    const yes = button(confirmLabel, () => dialog.close("yes"), "danger");
    const no = button("×", () => dialog.close("no"));
    dialog.append(el("p", question), yes, no);
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "yes");
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
    no.focus();
  });
}

/** Shows one of the knowledge rail's forms, the others hidden, with the
 * focus on `focusId`; asked again, it closes. Escape in a form closes it. */
export function showForm(formId: string, focusId: string) {
  const form = $(formId);
  const opening = form.hidden;
  for (const other of Array.from(document.querySelectorAll<HTMLElement>(".rail-form"))) other.hidden = true;
  form.hidden = !opening;
  if (opening) $(focusId).focus();
}

/** Escape closes the rail form it is pressed in and gives the focus back
 * to the menu button it was opened from (`data-opener`). */
export function setupRailForms() {
  for (const form of Array.from(document.querySelectorAll<HTMLElement>(".rail-form"))) {
    form.addEventListener("keydown", (event) => {
      if (event.key !== "Escape") return;
      form.hidden = true;
      $(form.dataset.opener!).focus();
    });
  }
}

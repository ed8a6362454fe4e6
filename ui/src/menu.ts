// Menu buttons (the knowledge rail's Add and collection menus), following
// the WAI-ARIA menu-button pattern: Enter, Space or ArrowDown opens the menu
// on its first item, arrows move, Escape closes back to the button, choosing
// an item or clicking elsewhere closes it.
import { $ } from "./dom";

function items(menu: HTMLElement): HTMLElement[] {
  return Array.from(menu.querySelectorAll<HTMLElement>("[role=menuitem]:not([hidden])"));
}

function open(trigger: HTMLElement, menu: HTMLElement, focusFirst: boolean) {
  closeMenus();
  menu.hidden = false;
  trigger.setAttribute("aria-expanded", "true");
  if (focusFirst) items(menu)[0]?.focus();
}

function close(trigger: HTMLElement, menu: HTMLElement, refocus: boolean) {
  if (menu.hidden) return;
  menu.hidden = true;
  trigger.setAttribute("aria-expanded", "false");
  if (refocus) trigger.focus();
}

/** Closes every open menu (another one opening, a click elsewhere). */
export function closeMenus() {
  for (const trigger of Array.from(document.querySelectorAll<HTMLElement>("[aria-haspopup=menu][aria-expanded=true]"))) {
    close(trigger, $(trigger.getAttribute("aria-controls")!), false);
  }
}

/** Moves focus among the items: ArrowUp/Down wrap, Home/End jump. */
function moveFocus(menu: HTMLElement, key: string) {
  const list = items(menu);
  const at = list.indexOf(document.activeElement as HTMLElement);
  const next = key === "Home" ? 0 : key === "End" ? list.length - 1 : (at + (key === "ArrowUp" ? -1 : 1) + list.length) % list.length;
  list[next]?.focus();
}

/** Wires the button that controls a `role=menu` element. */
export function setupMenu(trigger: HTMLElement) {
  const menu = $(trigger.getAttribute("aria-controls")!);
  trigger.addEventListener("click", (event) => {
    event.stopPropagation();
    if (menu.hidden) open(trigger, menu, event.detail === 0);
    else close(trigger, menu, false);
  });
  trigger.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowDown") return;
    event.preventDefault();
    open(trigger, menu, true);
  });
  menu.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      close(trigger, menu, true);
    } else if (["ArrowDown", "ArrowUp", "Home", "End"].includes(event.key)) {
      event.preventDefault();
      moveFocus(menu, event.key);
    } else if (event.key === "Tab") {
      close(trigger, menu, false);
    }
  });
  // An item's own click handler runs first; then the menu closes, and the
  // focus goes back to the button unless the item moved it (to a form it showed).
  menu.addEventListener("click", (event) => {
    if ((event.target as HTMLElement).closest("[role=menuitem]")) close(trigger, menu, menu.contains(document.activeElement));
  });
}

/** Wires every menu button in the page and closes menus on a click outside them. */
export function setupMenus() {
  for (const trigger of Array.from(document.querySelectorAll<HTMLElement>("[aria-haspopup=menu]"))) setupMenu(trigger);
  document.addEventListener("click", (event) => {
    if (!(event.target as HTMLElement).closest("[role=menu]")) closeMenus();
  });
}

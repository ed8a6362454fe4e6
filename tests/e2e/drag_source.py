#!/usr/bin/python3
"""A small GTK window that offers the files named on the command line as a
drag (text/uri-list), like a file manager: the end-to-end suite presses the
mouse on it with xdotool and releases it over Kea's window, a real X11
drag-and-drop. Run with Debian's /usr/bin/python3 (python3-gi, GTK 3).

Usage: drag_source.py X Y FILE...   (the window's top-left corner, then files)
Prints "ready" once the window is on screen; quits when the drag ends.
"""

import sys
from pathlib import Path

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402


def main():
    x, y = int(sys.argv[1]), int(sys.argv[2])
    uris = [Path(p).absolute().as_uri() for p in sys.argv[3:]]
    window = Gtk.Window(title="kea-drag-source")
    window.set_default_size(160, 120)
    window.move(x, y)
    source = Gtk.Button(label="drag")
    source.drag_source_set(Gdk.ModifierType.BUTTON1_MASK, [], Gdk.DragAction.COPY)
    source.drag_source_add_uri_targets()
    source.connect("drag-data-get", lambda _w, _c, data, _i, _t: data.set_uris(uris))
    source.connect("drag-end", lambda *_: GLib.timeout_add(200, Gtk.main_quit))
    window.add(source)
    window.connect("destroy", Gtk.main_quit)
    window.show_all()
    GLib.timeout_add(300, lambda: print("ready", flush=True) and False)
    # Never outlive the test that started it.
    GLib.timeout_add_seconds(60, Gtk.main_quit)
    Gtk.main()


if __name__ == "__main__":
    main()

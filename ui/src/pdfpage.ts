// The cited page of a PDF, rendered with pdf.js in the passage panel, with
// the lines of the cited passage highlighted.

import { GlobalWorkerOptions, getDocument } from "pdfjs-dist";
import type { TextItem } from "pdfjs-dist/types/src/display/api";
import { piecesOfPassage } from "./state";
import workerUrl from "pdfjs-dist/build/pdf.worker.min.mjs?url";

GlobalWorkerOptions.workerSrc = workerUrl;

/**
 * Renders `page` of the PDF in `bytes` into `container` at its width and
 * highlights the passage's lines; returns how many pieces were highlighted.
 */
export async function renderPdfPage(container: HTMLElement, bytes: ArrayBuffer, pageNumber: number, passage: string): Promise<number> {
  container.replaceChildren();
  const pdf = await getDocument({ data: new Uint8Array(bytes) }).promise;
  try {
    const page = await pdf.getPage(Math.min(Math.max(pageNumber, 1), pdf.numPages));
    const width = Math.max((container.clientWidth || 520) - 2, 100);
    const viewport = page.getViewport({ scale: width / page.getViewport({ scale: 1 }).width });
    const canvas = document.createElement("canvas");
    canvas.width = Math.floor(viewport.width);
    canvas.height = Math.floor(viewport.height);
    container.style.position = "relative";
    container.append(canvas);
    await page.render({ canvas, viewport }).promise;
    const content = await page.getTextContent();
    const pieces = content.items.filter((i): i is TextItem => "str" in i);
    const found = piecesOfPassage(pieces, passage);
    for (const piece of found) {
      const [x, y] = viewport.convertToViewportPoint(piece.transform[4], piece.transform[5]);
      const height = piece.height * viewport.scale;
      const mark = document.createElement("div");
      mark.className = "pdf-highlight";
      Object.assign(mark.style, { left: `${x}px`, top: `${y - height}px`, width: `${piece.width * viewport.scale}px`, height: `${height}px` });
      container.append(mark);
    }
    return found.length;
  } finally {
    void pdf.destroy();
  }
}

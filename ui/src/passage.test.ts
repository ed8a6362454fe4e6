import { describe, expect, it } from "vitest";
import { piecesOfPassage, squeeze } from "./state";

describe("the cited passage on a PDF page", () => {
  it("matches the page's text pieces that are in the passage, whatever the line breaks", () => {
    const passage = "Bar spacing must suit the species: about 1.2 cm for budgerigars and\nlovebirds.";
    const pieces = [{ str: "Choosing a cage" }, { str: "Bar spacing must suit the species: about 1.2 cm for budgerigars and" }, { str: "lovebirds." }, { str: "a" }, { str: " " }];
    expect(piecesOfPassage(pieces, passage).map((p) => p.str)).toEqual([pieces[1].str, "lovebirds."]);
  });

  it("ignores spaces and case when comparing", () => {
    expect(squeeze(" Bar  Spacing\n")).toBe("barspacing");
  });
});

//! Spreadsheets and CSV through the real `kea` binary and MiniLM: a .xlsx
//! and a .ods written by writer libraries, and a .csv, each answering a
//! question whose answer is in exactly one row; the passage found names the
//! sheet and a row range holding that row.

use crate::util::Sandbox;

/// Rows of made-up records: (name, role, city, phone extension).
fn people() -> Vec<[String; 4]> {
    let first = ["Ada", "Bram", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kalani", "Lior"];
    let last = ["Moreau", "Novak", "Okafor", "Pereira", "Quist", "Rahman", "Sato", "Tanaka", "Ueda", "Varga", "Weber", "Yilmaz"];
    let roles = ["accountant", "engineer", "designer", "nurse", "translator", "chemist"];
    let cities = ["Lisbon", "Tallinn", "Porto", "Kraków", "Ghent", "Bergen", "Turin"];
    (0..36)
        .map(|i| [format!("{} {}", first[i % 12], last[(i * 5 + i / 12 + 3) % 12]), roles[i % 6].into(), cities[i % 7].into(), format!("{}", 4100 + i * 7)])
        .collect()
}

/// A workbook with a short sheet of offices and a longer one of staff.
fn staff_xlsx() -> Vec<u8> {
    let mut book = rust_xlsxwriter::Workbook::new();
    let offices = book.add_worksheet().set_name("Offices").unwrap();
    for (row, line) in (0..).zip([["City", "Address"], ["Lisbon", "12 Rua Augusta"], ["Tallinn", "4 Viru street"]]) {
        for (col, text) in (0..).zip(line) {
            offices.write_string(row, col, text).unwrap();
        }
    }
    let staff = book.add_worksheet().set_name("Staff").unwrap();
    for (col, text) in (0..).zip(["Name", "Role", "Office", "Extension"]) {
        staff.write_string(0, col, text).unwrap();
    }
    for (row, [name, role, city, extension]) in (1..).zip(people()) {
        staff.write_string(row, 0, name).unwrap().write_string(row, 1, role).unwrap().write_string(row, 2, city).unwrap();
        staff.write_number(row, 3, extension.parse::<f64>().unwrap()).unwrap();
    }
    book.save_to_buffer().unwrap()
}

/// A spreadsheet with one sheet of stock: (item, warehouse, quantity).
fn stock_ods() -> Vec<u8> {
    let mut book = spreadsheet_ods::WorkBook::new_empty();
    let mut sheet = spreadsheet_ods::Sheet::new("Stock");
    for (col, text) in (0..).zip(["Item", "Warehouse", "Quantity"]) {
        sheet.set_value(0, col, text);
    }
    let items = ["copper washer", "brass hinge", "steel bracket", "titanium sprocket", "nylon gasket", "zinc bolt", "oak dowel", "felt pad"];
    for i in 0..24u32 {
        let name = if i == 19 { "cobalt flywheel" } else { items[i as usize % items.len()] };
        sheet.set_value(i + 1, 0, format!("{name} {}", 100 + i));
        sheet.set_value(i + 1, 1, if i % 2 == 0 { "north depot" } else { "south depot" });
        sheet.set_value(i + 1, 2, f64::from(i * 13 % 50 + 1));
    }
    book.push_sheet(sheet);
    spreadsheet_ods::write_ods_buf(&mut book, Vec::new()).unwrap()
}

/// Orders as CSV, one with a quoted note holding commas.
fn orders_csv() -> String {
    let mut csv = String::from("Order,Customer,Product,Note\n");
    let products = ["kettle", "toaster", "blender", "lamp", "desk fan"];
    for i in 0..30 {
        let note = if i == 17 { "\"gift wrap, ribbon, card saying \"\"happy retirement\"\"\"" } else { "standard delivery" };
        csv.push_str(&format!("A-{},customer {},{},{note}\n", 5000 + i, i * 3, products[i % 5]));
    }
    csv
}

/// The first and last row of a heading path ending in `rows 2–9` or `row 4`.
fn rows_of(path: &str) -> (u32, u32) {
    let tail = path.rsplit(" > ").next().unwrap();
    let rows = tail.strip_prefix("rows ").or_else(|| tail.strip_prefix("row ")).unwrap_or_else(|| panic!("no row range in {path}"));
    let (first, last) = rows.split_once('–').unwrap_or((rows, rows));
    (first.parse().unwrap(), last.parse().unwrap())
}

/// The top search hit for `query`, which must come from `source`, sit under
/// `sheet` (when there is one) and hold spreadsheet row `row` as `line`.
fn assert_top_hit(sandbox: &Sandbox, query: &str, source: &str, sheet: Option<&str>, row: u32, line: &str) {
    let hits = sandbox.search(query, 3);
    let top = hits.first().unwrap_or_else(|| panic!("no hit for {query}"));
    assert_eq!(top["source"], source, "{query}: {hits:#?}");
    let path = top["heading_path"].as_str().unwrap();
    if let Some(sheet) = sheet {
        assert!(path.starts_with(&format!("{sheet} > row")), "{query}: {path}");
    } else {
        assert!(path.starts_with("row"), "{query}: {path}");
    }
    let (first, last) = rows_of(path);
    assert!(first <= row && row <= last, "{query}: row {row} is not in {path}");
    assert!(top["text"].as_str().unwrap().lines().any(|l| l == line), "{query}: {line:?} not in {}", top["text"]);
}

#[test]
fn spreadsheet_and_csv_rows_are_found_and_cited_by_sheet_and_row_range() {
    let sandbox = Sandbox::empty();
    std::fs::write(sandbox.path("staff.xlsx"), staff_xlsx()).unwrap();
    std::fs::write(sandbox.path("stock.ods"), stock_ods()).unwrap();
    std::fs::write(sandbox.path("orders.csv"), orders_csv()).unwrap();
    let report = sandbox.index();
    for file in ["staff.xlsx", "stock.ods", "orders.csv"] {
        assert_eq!(sandbox.error_of(file), None, "{file} was read: {report}");
    }
    // Row 23 of Staff is people()[21].
    let person = &people()[21];
    let line = format!("Name: {} | Role: {} | Office: {} | Extension: {}", person[0], person[1], person[2], person[3]);
    assert_top_hit(&sandbox, &format!("What is the phone extension of {}?", person[0]), "staff.xlsx", Some("Staff"), 23, &line);
    let line = "Item: cobalt flywheel 119 | Warehouse: south depot | Quantity: 48";
    assert_top_hit(&sandbox, "How many cobalt flywheels are in stock?", "stock.ods", Some("Stock"), 21, line);
    assert_top_hit(
        &sandbox,
        "Which order asked for gift wrap with a happy retirement card?",
        "orders.csv",
        None,
        19,
        "Order: A-5017 | Customer: customer 51 | Product: blender | Note: gift wrap, ribbon, card saying \"happy retirement\"",
    );

    let asked = sandbox.json(&["ask", "Which order asked for gift wrap with a happy retirement card?", "--provider", "none", "--json"]);
    let citation = &asked["citations"][0];
    assert_eq!(citation["source"], "orders.csv", "{asked}");
    let (first, last) = rows_of(citation["heading_path"].as_str().unwrap());
    assert!(first <= 19 && 19 <= last, "{asked}");
}

/// `bytes` (a zip) with its part `name` replaced by `part`.
fn with_part(bytes: &[u8], name: &str, part: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).unwrap();
        let mut content = Vec::new();
        file.read_to_end(&mut content).unwrap();
        out.start_file(file.name(), options).unwrap();
        out.write_all(if file.name() == name { part } else { &content }).unwrap();
    }
    out.finish().unwrap().into_inner()
}

/// Workbooks are read in the limited reader process: one whose shared
/// strings unzip to 60 MB fails alone at a 40 MB budget, a cut one fails
/// with its reason, and the good one beside them is indexed.
#[test]
fn a_workbook_over_its_memory_budget_or_corrupt_fails_alone() {
    let sandbox = Sandbox::empty();
    let good = staff_xlsx();
    let mut strings =
        br#"<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="1" uniqueCount="1"><si><t>"#
            .to_vec();
    strings.extend(std::iter::repeat_n(b'A', 60 << 20));
    strings.extend_from_slice(b"</t></si></sst>");
    std::fs::write(sandbox.path("bomb.xlsx"), with_part(&good, "xl/sharedStrings.xml", &strings)).unwrap();
    std::fs::write(sandbox.path("cut.xlsx"), &good[..good.len() / 2]).unwrap();
    std::fs::write(sandbox.path("staff.xlsx"), &good).unwrap();
    let report = sandbox.json(&["index", "--json", "--file-memory", "40"]);
    assert_eq!(report["errors"].as_array().unwrap().len(), 2, "{report}");
    let bomb = sandbox.error_of("bomb.xlsx").unwrap_or_default();
    assert!(bomb.starts_with("out of memory: reading this file needed over 40 MB"), "{bomb}");
    let cut = sandbox.error_of("cut.xlsx").unwrap_or_default();
    assert!(cut.starts_with("not a spreadsheet"), "{cut}");
    assert_eq!(sandbox.error_of("staff.xlsx"), None);
    assert_eq!(sandbox.search("Offices Lisbon Rua Augusta address", 1)[0]["heading_path"], "Offices > rows 2–3");
}

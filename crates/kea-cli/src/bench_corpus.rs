//! `kea bench corpus`: a generated folder of mixed real-looking files —
//! Markdown and text in English and Chinese, Word files, text PDFs and,
//! every so often, scanned pages (copies of the OCR fixtures) — indexed with
//! the real model and OCR. Prints files/s, chunks/s, the wall time against
//! the model time alone, peak RSS and the slowest files.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::Context;
use kea_engine::model::ModelPaths;
use kea_engine::{CancelToken, Engine, EngineConfig, IndexEvent};
use pdf_extract::{dictionary, Document, Object, Stream};

use super::{peak_rss_mb, round, synthetic_doc};

const CHINESE_SENTENCES: [&str; 6] = [
    "玄凤鹦鹉原产于澳大利亚内陆，喜欢成群生活。",
    "每天应更换饮水并清洗食盆，保持笼子干燥。",
    "鹦鹉需要多样的饮食，包括颗粒饲料、蔬菜和少量种子。",
    "笼子的栏杆间距必须适合鸟的体型，以免卡住头部。",
    "夜间应保持安静和黑暗，让鸟每天睡足十到十二小时。",
    "换羽期间鸟可能烦躁，应补充蛋白质和维生素。",
];

#[derive(serde::Serialize)]
pub struct CorpusFigures {
    files: usize,
    scanned_files: usize,
    chunks: usize,
    errors: usize,
    ingest_ms: u64,
    /// The stored chunk texts embedded again alone, in the same batches.
    model_alone_ms: u64,
    ratio_to_model_alone: f64,
    files_per_s: f64,
    chunks_per_s: f64,
    peak_rss_mb: f64,
    readers: usize,
    /// Time spent reading files (extraction, OCR, chunking), summed over readers.
    read_ms_total: u64,
    slowest_files: Vec<(String, u64)>,
}

/// Generates `files` files (one in `scanned_every` a scan) and indexes them.
pub fn run(files: usize, scanned_every: usize, scans: &Path, paths: Option<ModelPaths>) -> anyhow::Result<CorpusFigures> {
    let tmp = tempfile::tempdir()?;
    let knowledge = tmp.path().join("knowledge");
    std::fs::create_dir_all(&knowledge)?;
    let mut scanned_files = 0;
    for i in 0..files {
        if scanned_every > 0 && i % scanned_every == scanned_every - 1 {
            let (name, ext) = if scanned_files % 2 == 0 { ("scan-en.pdf", "pdf") } else { ("scan-zh.png", "png") };
            std::fs::copy(scans.join(name), knowledge.join(format!("scan-{i:05}.{ext}")))
                .with_context(|| format!("copying {name} from {}", scans.display()))?;
            scanned_files += 1;
        } else {
            write_document(&knowledge, i)?;
        }
    }
    let mut config = EngineConfig::new(&knowledge, tmp.path().join("data"));
    if let Some(paths) = paths {
        config.model_paths.dirs.splice(0..0, paths.dirs);
    }
    let readers = config.readers;
    let engine = Engine::open(config)?;
    engine.indexer().embed_passages(&["warm up".to_string()])?;

    let read_times = Mutex::new(Vec::new());
    let sink = |event: &IndexEvent| {
        if let IndexEvent::FileDone { path, read_ms, .. } = event {
            read_times.lock().unwrap_or_else(|p| p.into_inner()).push((path.clone(), *read_ms));
        }
    };
    let started = Instant::now();
    let report = engine.indexer().sync(&sink, &CancelToken::new())?;
    let ingest_ms = started.elapsed().as_millis().max(1) as u64;

    let ids: Vec<u64> = (1..=report.chunks as u64).collect();
    let texts: Vec<String> = engine.retriever().chunks(&ids)?.into_iter().map(|row| row.text).collect();
    let started = Instant::now();
    for group in texts.chunks(engine.config().embed.batch_size.max(1)) {
        engine.indexer().embed_passages(group)?;
    }
    let model_alone_ms = started.elapsed().as_millis().max(1) as u64;

    let mut slowest = read_times.into_inner().unwrap_or_default();
    let read_ms_total = slowest.iter().map(|(_, ms)| ms).sum();
    slowest.sort_by_key(|(_, ms)| std::cmp::Reverse(*ms));
    slowest.truncate(5);
    Ok(CorpusFigures {
        files,
        scanned_files,
        chunks: report.chunks,
        errors: report.errors.len(),
        ingest_ms,
        model_alone_ms,
        ratio_to_model_alone: round(ingest_ms as f64 / model_alone_ms as f64),
        files_per_s: round(files as f64 / (ingest_ms as f64 / 1000.0)),
        chunks_per_s: round(report.chunks as f64 / (ingest_ms as f64 / 1000.0)),
        peak_rss_mb: peak_rss_mb()?,
        readers,
        read_ms_total,
        slowest_files: slowest,
    })
}

/// File `i` of the corpus: Markdown, Chinese text, Word or a text PDF.
fn write_document(dir: &Path, i: usize) -> anyhow::Result<()> {
    let chinese: String = (0..12)
        .map(|k| CHINESE_SENTENCES[(i + k * 5) % CHINESE_SENTENCES.len()])
        .collect::<Vec<_>>()
        .chunks(3)
        .map(|c| c.concat())
        .collect::<Vec<_>>()
        .join("\n\n");
    write_mixed(dir, i, &synthetic_doc(i), &format!("# 第{i}号\n\n{chinese}"))
}

/// Writes file `i` of a mixed folder from its English and Chinese Markdown:
/// as Markdown, plain text (Chinese), Word or a text PDF (English), by `i`.
pub(super) fn write_mixed(dir: &Path, i: usize, english: &str, chinese: &str) -> anyhow::Result<()> {
    match i % 10 {
        0..=3 => std::fs::write(dir.join(format!("notes-{i:05}.md")), english)?,
        4 | 5 => std::fs::write(dir.join(format!("笔记-{i:05}.txt")), chinese.replace('#', ""))?,
        6 => std::fs::write(dir.join(format!("report-{i:05}.docx")), docx(english))?,
        7 => std::fs::write(dir.join(format!("报告-{i:05}.docx")), docx(chinese))?,
        8 => std::fs::write(dir.join(format!("guide-{i:05}.pdf")), text_pdf(english)?)?,
        _ => std::fs::write(dir.join(format!("中文-{i:05}.md")), chinese)?,
    }
    Ok(())
}

/// A Word file with one paragraph per paragraph of `text`.
fn docx(text: &str) -> Vec<u8> {
    let escape = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let body: String = text.split("\n\n").map(|p| format!("<w:p><w:r><w:t>{}</w:t></w:r></w:p>", escape(p.trim_start_matches('#').trim()))).collect();
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
    );
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    zip.start_file("word/document.xml", options).expect("zip entry");
    zip.write_all(xml.as_bytes()).expect("zip write");
    zip.finish().expect("zip finish").into_inner()
}

/// A one-page PDF (Helvetica) with `text`'s lines, headings set larger.
fn text_pdf(text: &str) -> anyhow::Result<Vec<u8>> {
    let mut content = String::from("BT 14 TL 50 800 Td\n");
    for line in text.lines().filter(|l| !l.is_empty()) {
        let size = if line.starts_with('#') { 16 } else { 10 };
        let clean: String = line.trim_start_matches('#').trim().chars().filter(|c| c.is_ascii() && !matches!(c, '(' | ')' | '\\')).collect();
        for piece in clean.as_bytes().chunks(90) {
            content.push_str(&format!("/F1 {size} Tf ({}) Tj T*\n", String::from_utf8_lossy(piece)));
        }
    }
    content.push_str("ET");
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
    let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
    let content_id = doc.add_object(Stream::new(dictionary! {}, content.into_bytes()));
    let page_id = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
        "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
    });
    doc.objects
        .insert(pages_id, Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![page_id.into()], "Count" => 1, "Resources" => resources_id }));
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes)?;
    Ok(bytes)
}

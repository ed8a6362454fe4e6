//! Terminal progress for `kea index`: a progress bar (files, chunks, rate,
//! ETA) when stderr is a terminal and output is for people; nothing but the
//! final summary otherwise, so `--json` and pipes stay machine-readable.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};
use kea_engine::{IndexEvent, ProgressSink, SyncReport};

use crate::output::printable;

/// Draws a bar from index events.
struct BarSink {
    bar: ProgressBar,
    embedded: AtomicUsize,
}

impl ProgressSink for BarSink {
    fn event(&self, event: &IndexEvent) {
        match event {
            IndexEvent::Started { files_to_index, .. } => {
                self.bar.set_length(*files_to_index as u64);
                self.bar.set_position(0);
            }
            IndexEvent::ChunksEmbedded { count } => {
                let done = self.embedded.fetch_add(*count, Ordering::Relaxed) + count;
                self.bar.set_message(format!("{done} chunks embedded"));
            }
            IndexEvent::FileDone { path, error, files_done, .. } => {
                self.bar.set_position(*files_done as u64);
                if let Some(error) = error {
                    self.bar.println(format!("  ✗ {}: {}", printable(path), printable(&error.to_string())));
                }
            }
            IndexEvent::Removed { path } => self.bar.println(format!("  - {}", printable(path))),
            IndexEvent::Finished { .. } => self.bar.finish_and_clear(),
        }
    }
}

/// The sink for a one-off sync: a bar for people on a terminal, else silent.
pub fn sink_for(json: bool) -> Box<dyn ProgressSink> {
    if json || !std::io::stderr().is_terminal() {
        return Box::new(());
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} files · {msg} · {per_sec} · ETA {eta}").expect("valid template").progress_chars("=> "),
    );
    bar.set_message("0 chunks embedded");
    Box::new(BarSink { bar, embedded: AtomicUsize::new(0) })
}

/// The sink while watching: one summary line per sync.
pub fn watch_sink(json: bool) -> Arc<dyn ProgressSink> {
    Arc::new(move |event: &IndexEvent| {
        if let IndexEvent::Finished { report } = event {
            print_report(report, json);
        }
    })
}

pub fn print_report(report: &SyncReport, json: bool) {
    if json {
        println!("{}", serde_json::to_string(report).expect("report serialises"));
        return;
    }
    println!(
        "{} documents, {} chunks ({} embedded, {} reused, {} removed) in {} ms{}",
        report.documents,
        report.chunks,
        report.embedded,
        report.reused,
        report.removed,
        report.elapsed_ms,
        if report.cancelled { " — cancelled, the rest is done next time" } else { "" }
    );
    for error in &report.errors {
        println!("  ✗ {}: {}", printable(&error.path), printable(&error.message));
    }
}

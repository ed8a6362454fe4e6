//! Indexing the sample knowledge with the real model: retrieval quality,
//! incremental re-embedding, deletes, renames, bad files, model changes and
//! vector-file repair.

use super::util::{count, files_on_disk, Sandbox};

/// English questions (paraphrased, not headings) and the document that answers them.
const QUESTIONS: &[(&str, &str)] = &[
    ("What do cockatiels eat?", "parrots/cockatiel.md"),
    ("How long do African grey parrots live?", "parrots/african-grey.md"),
    ("Which parrot builds stick nests?", "parrots/monk-parakeet.md"),
    ("Why do lorikeets need nectar instead of seeds?", "parrots/rainbow-lorikeet.md"),
    ("How can I tell a male budgie from a female?", "parrots/budgerigar.md"),
    ("Which parrot has a short scarlet tail?", "parrots/african-grey.md"),
    ("What bar spacing does a parrot cage need?", "guides/cage-setup.pdf"),
    ("Which foods are poisonous to parrots?", "guides/household-dangers.txt"),
    ("Why are male and female eclectus different colours?", "parrots/eclectus.md"),
    ("Which bird dances to music?", "parrots/sulphur-crested-cockatoo.md"),
    ("Is the sun conure a loud bird?", "parrots/sun-conure.md"),
    ("Where do rosy-faced lovebirds come from?", "parrots/rosy-faced-lovebird.md"),
];

#[test]
fn sample_knowledge_indexes_and_english_questions_find_the_right_document() {
    let sandbox = Sandbox::with_samples();
    let report = sandbox.index();
    let on_disk = files_on_disk(&sandbox.knowledge);
    assert_eq!(count(&report, "documents"), on_disk.len() as u64);
    assert_eq!(report["errors"], serde_json::json!([]), "sample documents must all index");
    assert_eq!(count(&report, "embedded") + count(&report, "reused"), count(&report, "chunks"));
    let status = sandbox.status();
    assert_eq!(status["model_id"], "all-minilm-l6-v2");
    assert_eq!(status["integrity_problems"], serde_json::json!([]));

    let mut top1 = 0;
    for (question, expected) in QUESTIONS {
        let hits = sandbox.search(question, 3);
        let sources: Vec<&str> = hits.iter().map(|h| h["source"].as_str().unwrap()).collect();
        assert!(sources.contains(expected), "{question:?}: expected {expected} in the top 3, got {sources:?}");
        top1 += usize::from(sources[0] == *expected);
    }
    assert!(top1 >= QUESTIONS.len() - 1, "only {top1}/{} questions answered at rank 1", QUESTIONS.len());

    // Hits carry what a citation needs.
    let hit = &sandbox.search("What do cockatiels eat?", 1)[0];
    assert_eq!(hit["heading_path"], "Cockatiel > Diet");
    assert!(hit["text"].as_str().unwrap().contains("pellets"));
    let pdf_hit = &sandbox.search("What bar spacing does a parrot cage need?", 1)[0];
    assert_eq!(pdf_hit["page"], 1, "PDF hits keep their page number");

    // A second run with nothing changed does nothing.
    let again = sandbox.index();
    assert_eq!((count(&again, "processed"), count(&again, "embedded")), (0, 0));
}

#[test]
fn editing_one_paragraph_reembeds_only_the_changed_chunk() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let path = sandbox.path("parrots/cockatiel.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replace("Millet sprays are best kept as treats", "Millet sprays and sunflower hearts are best kept as treats");
    assert_ne!(text, edited);
    std::fs::write(&path, edited).unwrap();
    let report = sandbox.index();
    assert_eq!(count(&report, "processed"), 1);
    assert_eq!(count(&report, "embedded"), 1, "only the Diet chunk changed: {report}");
    assert_eq!(count(&report, "reused"), 5);
    let hit = &sandbox.search("sunflower hearts as treats for cockatiels", 1)[0];
    assert!(hit["text"].as_str().unwrap().contains("sunflower hearts"));
}

#[test]
fn touching_a_file_without_changing_it_embeds_nothing() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let path = sandbox.path("parrots/budgerigar.md");
    let text = std::fs::read(&path).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, text).unwrap();
    let report = sandbox.index();
    assert_eq!((count(&report, "processed"), count(&report, "embedded")), (1, 0));
}

#[test]
fn deletes_and_renames_are_reflected_without_reembedding() {
    let sandbox = Sandbox::with_samples();
    let first = sandbox.index();
    std::fs::rename(sandbox.path("parrots/monk-parakeet.md"), sandbox.path("parrots/quaker-parrot.md")).unwrap();
    let renamed = sandbox.index();
    assert_eq!(count(&renamed, "embedded"), 0, "a rename reuses every vector: {renamed}");
    assert_eq!(count(&renamed, "removed"), 1);
    assert_eq!(count(&renamed, "chunks"), count(&first, "chunks"));
    let hit = &sandbox.search("Which parrot builds stick nests?", 1)[0];
    assert_eq!(hit["source"], "parrots/quaker-parrot.md");

    std::fs::remove_file(sandbox.path("parrots/quaker-parrot.md")).unwrap();
    let deleted = sandbox.index();
    assert_eq!(count(&deleted, "documents"), count(&first, "documents") - 1);
    let sources: Vec<String> = sandbox.search("Which parrot builds stick nests?", 5).iter().map(|h| h["source"].as_str().unwrap().to_string()).collect();
    assert!(!sources.iter().any(|s| s.contains("quaker")), "deleted file still answers: {sources:?}");
    assert_eq!(sandbox.status()["integrity_problems"], serde_json::json!([]));
}

#[test]
fn kea_reindex_and_remove_act_on_one_document_only() {
    let sandbox = Sandbox::with_samples();
    let first = sandbox.index();
    let reindexed = sandbox.json(&["reindex", "parrots/cockatiel.md", "--json"]);
    assert_eq!((count(&reindexed, "compared"), count(&reindexed, "processed"), count(&reindexed, "embedded")), (1, 1, 0), "{reindexed}");

    let file = sandbox.path("parrots/cockatiel.md");
    let removed = sandbox.json(&["remove", file.to_str().unwrap(), "--json"]);
    assert_eq!((count(&removed, "compared"), count(&removed, "removed")), (0, 1), "{removed}");
    assert!(!file.exists(), "remove deletes the file, like the knowledge pane");
    assert_eq!(count(&removed, "documents"), count(&first, "documents") - 1);

    let out = sandbox.run(&["reindex", "parrots/cockatiel.md"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("[not_found]"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = sandbox.run(&["remove", "../outside.md"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("[invalid_input]"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn truncated_pdf_and_binary_markdown_are_reported_and_the_rest_indexed() {
    let sandbox = Sandbox::with_samples();
    let pdf = std::fs::read(sandbox.path("guides/cage-setup.pdf")).unwrap();
    std::fs::write(sandbox.path("guides/truncated.pdf"), &pdf[..pdf.len() / 3]).unwrap();
    let binary: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
    std::fs::write(sandbox.path("binary.md"), binary).unwrap();
    std::fs::write(sandbox.path("empty.txt"), b"").unwrap();

    let report = sandbox.index();
    let errors: Vec<(String, String)> =
        report["errors"].as_array().unwrap().iter().map(|e| (e["path"].as_str().unwrap().to_string(), e["message"].as_str().unwrap().to_string())).collect();
    let error_paths: Vec<&str> = errors.iter().map(|e| e.0.as_str()).collect();
    assert!(error_paths.contains(&"guides/truncated.pdf"), "{errors:?}");
    assert!(error_paths.contains(&"binary.md"), "{errors:?}");
    assert!(errors.iter().all(|(_, m)| !m.is_empty()));
    let docs = sandbox.documents();
    let good: Vec<&(String, serde_json::Value)> = docs.iter().filter(|(_, d)| d["status"] == "indexed").collect();
    assert!(good.len() >= files_on_disk(&sandbox.knowledge).len() - 3);
    assert!(good.iter().any(|(p, _)| p == "guides/cage-setup.pdf"), "the intact PDF is indexed");

    // Fixing a broken file clears its error.
    std::fs::write(sandbox.path("binary.md"), "# Fixed\n\nNow it is text.\n").unwrap();
    let fixed = sandbox.index();
    assert!(!fixed["errors"].as_array().unwrap().iter().any(|e| e["path"] == "binary.md"), "{fixed}");
}

#[test]
fn changing_the_model_reembeds_everything() {
    let sandbox = Sandbox::with_samples();
    let first = sandbox.index();
    // A second model folder: the same files under another id.
    let models = sandbox.data.parent().unwrap().join("other-models");
    let copy = models.join("minilm-copy");
    super::util::copy_dir(&super::util::repo_root().join("models/all-minilm-l6-v2"), &copy);
    let manifest = std::fs::read_to_string(copy.join("kea-model.json")).unwrap().replace("\"all-minilm-l6-v2\"", "\"minilm-copy\"");
    std::fs::write(copy.join("kea-model.json"), manifest).unwrap();

    let models_arg = models.to_str().unwrap();
    let out = sandbox.run(&["--models-dir", models_arg, "--embedding-model", "minilm-copy", "--reembed", "index", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(count(&report, "embedded"), count(&first, "chunks"), "every chunk is re-embedded");
    assert_eq!(count(&report, "reused"), 0);
    let status = sandbox.json(&["--models-dir", models_arg, "--embedding-model", "minilm-copy", "status", "--json"]);
    assert_eq!(status["model_id"], "minilm-copy");
    assert_eq!(status["vectors"], status["chunks"]);
}

/// Regression (issue 11): opening an index with another model used to wipe
/// every vector as a side effect. Now the index keeps its model unless a
/// switch is asked for with --reembed, and runs without flags use the
/// recorded model — including after a switch to a model of another dimension.
#[test]
fn a_model_switch_needs_reembed_and_later_runs_keep_the_new_model() {
    let sandbox = Sandbox::with_samples();
    let first = sandbox.index();
    let chunks = count(&first, "chunks");

    let refused = sandbox.run(&["--embedding-model", "fixture-clip-text", "index", "--json"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("[reembed_required]") && stderr.contains("--reembed"), "{stderr}");
    let status = sandbox.status();
    assert_eq!((status["model_id"].as_str(), count(&status, "vectors")), (Some("all-minilm-l6-v2"), chunks), "nothing was discarded");

    // A 4-dimensional model (the CLIP-shaped text fixture): the dimension changes too.
    let switched = sandbox.json(&["--embedding-model", "fixture-clip-text", "--reembed", "index", "--json"]);
    assert_eq!(count(&switched, "embedded"), chunks);
    let status = sandbox.status();
    assert_eq!((status["model_id"].as_str(), status["dim"].as_u64()), (Some("fixture-clip-text"), Some(4)));

    // No flags: the recorded model is used and nothing is embedded again.
    assert!(!sandbox.search("cuttlebone", 3).is_empty());
    let again = sandbox.index();
    assert_eq!((count(&again, "embedded"), count(&again, "chunks")), (0, chunks), "{again}");
    assert_eq!(sandbox.status()["vectors"], chunks);
    let settings: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(sandbox.data.join("settings.json")).unwrap()).unwrap();
    assert_eq!(settings["models"]["embedder"], "fixture-clip-text", "the choice is saved for the app too");
}

#[test]
fn corrupt_vector_file_is_rebuilt_from_the_store() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    std::fs::write(sandbox.data.join("vectors.usearch"), b"this is not an index").unwrap();
    let status = sandbox.status();
    assert_eq!(status["vectors_rebuilt_on_open"], true);
    assert_eq!(status["vectors"], status["chunks"]);
    assert_eq!(status["integrity_problems"], serde_json::json!([]));
    let hit = &sandbox.search("What do cockatiels eat?", 1)[0];
    assert_eq!(hit["source"], "parrots/cockatiel.md");

    std::fs::remove_file(sandbox.data.join("vectors.usearch")).unwrap();
    assert_eq!(sandbox.status()["vectors_rebuilt_on_open"], true);
    assert_eq!(sandbox.status()["vectors_rebuilt_on_open"], false, "a repaired file is trusted next time");
}

#[test]
fn full_text_mode_matches_exact_words() {
    let sandbox = Sandbox::with_samples();
    sandbox.index();
    let hits = sandbox.json(&["search", "cuttlebone", "--mode", "fts", "--json"]);
    let first = &hits.as_array().unwrap()[0];
    assert_eq!(first["source"], "parrots/budgerigar.md");
}

//! `kea setup`: the first-run plan on the command line. It samples the
//! knowledge folder's languages, reads the machine, looks for model servers
//! on this machine and proposes one set of models (see the engine's
//! `setup` module); `--plan` prints it without changing anything, `--yes`
//! installs what is missing, makes the set active and re-embeds.

use std::process::ExitCode;

use anyhow::Context;
use kea_engine::model::catalog::Role;
use kea_engine::settings::Settings;
use kea_engine::setup::{self, Plan, Proposal};
use kea_engine::EngineConfig;

#[derive(clap::Args)]
pub struct SetupArgs {
    /// Print the plan and change nothing.
    #[arg(long, conflicts_with = "yes")]
    plan: bool,
    /// Apply the plan: install what is missing, use the proposed models, re-embed.
    #[arg(long)]
    yes: bool,
    /// Propose an image model even when the folder has no pictures.
    #[arg(long)]
    photos: bool,
    /// With --yes: leave this role as it is (embedder, reranker, image, llm; repeatable).
    #[arg(long, value_name = "ROLE", requires = "yes")]
    skip: Vec<String>,
    /// Another OpenAI-compatible server to look at (base URL ending in /v1; repeatable).
    #[arg(long = "server", value_name = "URL")]
    servers: Vec<String>,
    #[arg(long)]
    json: bool,
}

/// `install_dir`: the `--models-dir` flag, which also receives installs.
pub fn run(args: &SetupArgs, config: EngineConfig, install_dir: Option<std::path::PathBuf>) -> anyhow::Result<ExitCode> {
    let settings_path = config.data_dir.join(Settings::FILE_NAME);
    let mut settings = Settings::load(&settings_path)?;
    let mut manager = settings.model_manager(&config);
    if let Some(dir) = install_dir {
        manager.install_dir = dir;
    }
    let mut plan = setup::plan_here(&config, &settings, &args.servers, args.photos)?;
    for role in &args.skip {
        let role = Role::parse(role).with_context(|| format!("unknown role {role:?} (embedder, reranker, image or llm)"))?;
        plan.proposal.retain(|p| p.role != role);
    }
    if args.json && !args.yes {
        println!("{}", serde_json::to_string_pretty(&plan)?);
    } else {
        print_plan(&plan);
    }
    if !args.yes {
        if !args.plan && !args.json {
            eprintln!("\nRun `kea setup --yes` to install and use these models.");
        }
        return Ok(ExitCode::SUCCESS);
    }
    apply(&plan, config, &mut settings, &settings_path, &manager)
}

fn print_plan(plan: &Plan) {
    let languages: Vec<String> = plan.languages.iter().map(|(l, s)| format!("{l} {:.0}%", s * 100.0)).collect();
    println!(
        "folder: {} documents, {} pictures; languages: {}",
        plan.documents,
        plan.images,
        if languages.is_empty() { "none yet".into() } else { languages.join(", ") }
    );
    let m = &plan.machine;
    println!("machine: {:.1} GiB memory, {} cores{}", m.ram_bytes as f64 / (1u64 << 30) as f64, m.cores, if m.avx2 { ", AVX2" } else { "" });
    if !plan.uncovered.is_empty() {
        let names: Vec<&str> = plan.uncovered.iter().map(|l| kea_engine::language::name(l)).collect();
        println!("note: the embedder in use ({}) does not read {}", plan.embedder, names.join(" or "));
    }
    for s in &plan.servers {
        println!("server: {} at {} ({} models)", s.kind, s.base_url, s.models.len());
    }
    for p in &plan.proposal {
        let size = if p.installed { "installed".to_string() } else { format!("{:.0} MB to download", p.bytes as f64 / 1e6) };
        let reembed = p.reembed_seconds.map(|s| format!(", ~{} to embed the folder", duration(s))).unwrap_or_default();
        println!("{:<9} {} ({size}{reembed})\n          {}", p.role.as_str(), p.id, p.reason);
    }
}

fn duration(seconds: u64) -> String {
    match seconds {
        s if s < 90 => format!("{s} s"),
        s => format!("{} min", s.div_ceil(60)),
    }
}

/// Installs the missing models, makes the proposal active and re-embeds when the embedder changes.
fn apply(
    plan: &Plan,
    config: EngineConfig,
    settings: &mut Settings,
    settings_path: &std::path::Path,
    manager: &kea_engine::model::manager::ModelManager,
) -> anyhow::Result<ExitCode> {
    let missing: Vec<String> = plan.proposal.iter().filter(|p| !p.installed && p.base_url.is_none()).map(|p| p.id.clone()).collect();
    if !missing.is_empty() {
        eprintln!("installing {} …", missing.join(", "));
        crate::models::install(manager, &missing)?;
    }
    let mut embedder = None;
    for p in &plan.proposal {
        match (p.role, &p.base_url) {
            (Role::Embedder, _) => embedder = Some(p),
            (_, Some(url)) => use_server(settings, url, &p.id),
            (role, None) => settings.choose(role, Some(p.id.clone())),
        }
    }
    settings.setup_done = true;
    settings.save(settings_path)?;
    match embedder.filter(|p| p.id != plan.embedder) {
        Some(Proposal { id, .. }) => crate::models::switch_embedder(config, settings, settings_path, id),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// The language model on a running server becomes the chosen one.
fn use_server(settings: &mut Settings, base_url: &str, model: &str) {
    let previous = settings.llm.clone();
    settings.llm.provider = kea_llm::ProviderPreference::Openai;
    settings.llm.base_url = Some(base_url.to_string());
    settings.llm.model = Some(model.to_string());
    settings.llm.api_key = None;
    // A key entered for another server is never sent to this one.
    settings.llm.carry_key_from(&previous);
}

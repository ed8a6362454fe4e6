//! `kea keys`: the secrets of a data folder — the language model's API key,
//! the team store's token, a remote embedder's key — set from standard
//! input (never from the command line, where other users could see it),
//! cleared, or listed as set or not. They are kept in the system keyring
//! when one answers, else in `secrets.json` (0600) beside the settings,
//! which `set` says.

use std::io::BufRead;
use std::path::Path;
use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};
use kea_engine::secrets::SecretStoreKind;
use kea_engine::settings::Settings;

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Set a key, read as one line from standard input.
    Set { name: KeyName },
    /// Forget a key.
    Clear { name: KeyName },
    /// Where keys are kept and which are set (never their values).
    Status {
        #[arg(long)]
        json: bool,
    },
}

/// The keys Kea keeps.
#[derive(Clone, Copy, ValueEnum)]
pub enum KeyName {
    /// The language model endpoint's API key.
    Llm,
    /// The team store's credentials (user:password or an API key).
    Team,
    /// The remote embedder's API key (with --embed-url configured).
    Embedder,
}

pub fn run(command: &KeysCommand, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let path = data_dir.join(Settings::FILE_NAME);
    let mut settings = Settings::load(&path)?;
    match command {
        KeysCommand::Set { name } => {
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            let value = line.trim_end_matches(['\r', '\n']).to_string();
            anyhow::ensure!(!value.trim().is_empty(), "no key on standard input (e.g. `printf %s \"$KEY\" | kea keys set llm`)");
            *slot(&mut settings, *name)? = Some(value);
            settings.save(&path)?;
            println!("{}", kept_where(Settings::secrets_kind(&path)));
        }
        KeysCommand::Clear { name } => {
            *slot(&mut settings, *name)? = None;
            settings.save(&path)?;
        }
        KeysCommand::Status { json } => status(&settings, &path, *json)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The settings field that holds `name`.
fn slot(settings: &mut Settings, name: KeyName) -> anyhow::Result<&mut Option<String>> {
    Ok(match name {
        KeyName::Llm => &mut settings.llm.api_key,
        KeyName::Team => &mut settings.team.token,
        KeyName::Embedder => {
            let remote = settings.models.remote_embedder.as_mut();
            &mut remote.ok_or_else(|| anyhow::anyhow!("no remote embedder is configured (index once with --embed-url and --embed-model)"))?.api_key
        }
    })
}

fn status(settings: &Settings, path: &Path, json: bool) -> anyhow::Result<()> {
    let kind = Settings::secrets_kind(path);
    let set = |value: Option<&String>| value.is_some_and(|v| !v.is_empty());
    let keys = [
        ("llm", set(settings.llm.api_key.as_ref())),
        ("team", set(settings.team.token.as_ref())),
        ("embedder", set(settings.models.remote_embedder.as_ref().and_then(|r| r.api_key.as_ref()))),
    ];
    if json {
        let mut value = serde_json::json!({"store": kind});
        for (name, is_set) in keys {
            value[name] = serde_json::Value::Bool(is_set);
        }
        println!("{value}");
    } else {
        println!("{}", kept_where(kind));
        for (name, is_set) in keys {
            println!("{name:<9} {}", if is_set { "set" } else { "not set" });
        }
    }
    Ok(())
}

fn kept_where(kind: SecretStoreKind) -> &'static str {
    match kind {
        SecretStoreKind::Keyring => "keys are kept in the system keyring",
        SecretStoreKind::File => "warning: no system keyring answered; keys are kept in secrets.json in the data folder (readable only by you)",
    }
}

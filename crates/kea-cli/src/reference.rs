//! The command line's reference (`docs/cli.md`), written from the clap
//! definitions themselves: every command and subcommand with its summary,
//! usage and arguments (flags, defaults, choices, environment variables).
//! A test keeps the file current (`KEA_UPDATE_DOCS=1` rewrites it).

use std::fmt::Write;

use clap::{Arg, Command};

/// The reference of `root` (the `kea` command) as Markdown.
pub fn markdown(root: &Command) -> String {
    let mut out = String::from(
        "# Command-line reference\n\n<!-- Written from the clap definitions by `make docs`; a test fails when it is stale. Do not edit by hand. -->\n\n",
    );
    let _ = writeln!(out, "{}\n", text_of(root));
    out.push_str("Options every command takes:\n\n");
    out.push_str(&table(root.get_arguments().filter(|a| a.is_global_set())));
    for sub in visible(root) {
        section(&mut out, sub, "kea", 2);
    }
    out
}

/// The subcommands shown in help, in their order.
fn visible(command: &Command) -> impl Iterator<Item = &Command> {
    command.get_subcommands().filter(|c| !c.is_hide_set() && c.get_name() != "help")
}

/// A command's long description, else its summary.
fn text_of(command: &Command) -> String {
    command.get_long_about().or(command.get_about()).map(|t| t.to_string()).unwrap_or_default()
}

/// The section of `command` (under `parent`'s name) and of its subcommands.
fn section(out: &mut String, command: &Command, parent: &str, level: usize) {
    let name = format!("{parent} {}", command.get_name());
    let _ = writeln!(out, "{} `{name}`\n\n{}\n", "#".repeat(level), text_of(command));
    let own: Vec<&Arg> = command.get_arguments().filter(|a| !a.is_global_set() && !a.is_hide_set()).collect();
    let positional: String = own.iter().filter(|a| a.is_positional()).map(|a| format!(" {}", arg_name(a))).collect();
    let more = if own.iter().any(|a| !a.is_positional()) { " [OPTIONS]" } else { "" };
    let subcommand = if visible(command).next().is_some() { " <COMMAND>" } else { "" };
    let _ = writeln!(out, "```text\n{name}{more}{positional}{subcommand}\n```\n");
    if !own.is_empty() {
        out.push_str(&table(own.into_iter()));
    }
    for sub in visible(command) {
        section(out, sub, &name, (level + 1).min(4));
    }
}

/// How an argument is written: `<ID>`, `--flag`, `-s, --long <VALUE>`.
fn arg_name(arg: &Arg) -> String {
    let value = arg
        .get_value_names()
        .map(|v| v.iter().map(|n| format!("<{n}>")).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| format!("<{}>", arg.get_id().as_str().to_uppercase()));
    if arg.is_positional() {
        return value;
    }
    let short = arg.get_short().map(|s| format!("-{s}, ")).unwrap_or_default();
    let long = arg.get_long().map(|l| format!("--{l}")).unwrap_or_default();
    let takes = arg.get_action().takes_values();
    format!("{short}{long}{}", if takes { format!(" {value}") } else { String::new() })
}

/// The arguments as a Markdown table: name, and help with default, choices and variable.
fn table<'a>(args: impl Iterator<Item = &'a Arg>) -> String {
    let mut out = String::from("| Argument | Meaning |\n|---|---|\n");
    for arg in args.filter(|a| !a.is_hide_set() && !["help", "version"].contains(&a.get_id().as_str())) {
        let help = arg.get_long_help().or(arg.get_help()).map(|h| h.to_string()).unwrap_or_default();
        let mut notes: Vec<String> = Vec::new();
        let defaults: Vec<String> = arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
        if !defaults.is_empty() && arg.get_action().takes_values() {
            notes.push(format!("default: `{}`", defaults.join(",")));
        }
        let choices: Vec<String> = arg.get_possible_values().iter().filter(|p| !p.is_hide_set()).map(|p| format!("`{}`", p.get_name())).collect();
        if !choices.is_empty() && arg.get_action().takes_values() {
            notes.push(format!("one of {}", choices.join(", ")));
        }
        if let Some(env) = arg.get_env() {
            notes.push(format!("also `${}`", env.to_string_lossy()));
        }
        let notes = if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) };
        let cell = format!("{help}{notes}").split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|");
        let _ = writeln!(out, "| `{}` | {cell} |", arg_name(arg));
    }
    out.push('\n');
    out
}

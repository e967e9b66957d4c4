//! `plumb completions SHELL` and `plumb manpages DIR`: shell completions
//! (clap_complete) and man pages (clap_mangen) made from the one grammar in
//! [`super::args`], so they never disagree with what plumb parses.

use super::args::Cli;
use super::ExitCode;
use clap::CommandFactory;
use std::path::Path;

/// Prints the completion script for `shell` on stdout.
pub fn completions_main(shell: clap_complete::Shell) -> ExitCode {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "plumb", &mut std::io::stdout());
    ExitCode::Ok
}

/// Writes `plumb.1` and one page per visible subcommand at every depth
/// (`plumb-run.1`, `plumb-trace-record.1`, ...) into `dir`, creating it.
pub fn manpages_main(dir: &Path) -> ExitCode {
    match write_manpages(dir) {
        Ok(n) => {
            println!("wrote {n} man pages to {}", dir.display());
            ExitCode::Ok
        }
        Err(e) => {
            eprintln!("plumb manpages: {}: {e}", dir.display());
            ExitCode::Failed
        }
    }
}

/// Writes the pages; returns how many.
fn write_manpages(dir: &Path) -> std::io::Result<usize> {
    std::fs::create_dir_all(dir)?;
    let mut cmd = Cli::command();
    cmd.build();
    write_page(dir, cmd)
}

/// Writes `cmd`'s page (named after it: `plumb-trace` for `trace` under
/// `plumb`) and its subcommands', depth first.
fn write_page(dir: &Path, cmd: clap::Command) -> std::io::Result<usize> {
    let name = cmd.get_name().to_string();
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    std::fs::write(dir.join(format!("{name}.1")), page)?;
    let mut written = 1;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        let sub = sub
            .clone()
            .name(format!("{name}-{}", sub.get_name()))
            .bin_name(format!(
                "{} {}",
                cmd.get_bin_name().unwrap_or(&name),
                sub.get_name()
            ));
        written += write_page(dir, sub)?;
    }
    Ok(written)
}

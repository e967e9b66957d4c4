//! The `plumb` command line: parses (see [`plumb::cli::args`]) and hands
//! each subcommand to its module.

use clap::Parser;
use plumb::cli::args::{Cli, Command};
use plumb::cli::run;
use plumb::cli::{
    check, compare, docs, fio, fleet, list, pack, report, serve, show, sysinfo, trace, ExitCode,
};

/// Counts each thread's heap, so that scripts' memory limits hold.
#[global_allocator]
static ALLOC: plumb::heap::CountingAlloc = plumb::heap::CountingAlloc;

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                ExitCode::BadInput as i32
            } else {
                0
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    plumb::cli::log::install();
    let code = match cli.command {
        Command::Fio { args } => fio::main(&args),
        Command::Run(args) => run::run_main(args),
        Command::Serve(args) => serve::serve_main(&args),
        Command::Trace(cmd) => trace::main(cmd),
        Command::Pack(cmd) => pack::main(cmd),
        Command::Fleet(cmd) => fleet::main(cmd),
        Command::Compare {
            files,
            format,
            fail_if_slower,
            allow_mismatch,
            svg,
            template,
            no_template,
            many,
        } => compare::compare_main(
            &files,
            compare::Options {
                format,
                fail_if_slower: fail_if_slower.as_deref(),
                allow_mismatch,
                svg: svg.as_deref(),
                template: match (no_template, template.as_deref()) {
                    (true, _) => compare::TemplateChoice::Generic,
                    (false, Some(t)) => compare::TemplateChoice::Given(t),
                    (false, None) => compare::TemplateChoice::FromPack,
                },
                many: many.options(),
            },
        ),
        Command::Show(args) => show::show_main(&args),
        Command::Report(args) => report::report_main(&args),
        Command::Check { scenario } => check::check_main(&scenario),
        Command::List { pack } => list::list_main(pack.as_deref()),
        Command::Sysinfo { json, target } => sysinfo::sysinfo_main(json, &target),
        Command::Completions { shell } => docs::completions_main(shell),
        Command::Manpages { dir } => docs::manpages_main(&dir),
    };
    std::process::exit(code as i32);
}

//! `likes-admin <command>`: day-2 operations. Exit status: 0 done, 1 drift found (audit),
//! 2 bad usage or input (nothing changed), 3 the operation failed or was refused (run it again:
//! every command is idempotent).

use std::process::ExitCode;

use clap::Parser;
use likes_admin::cli::Cli;
use likes_admin::commands::run;
use likes_admin::report::{error_json, error_report};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // `--help` and `--version` are answers, not errors.
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match run(&cli).await {
        Ok(report) => {
            if cli.json {
                println!("{}", report.doc);
            } else {
                println!("{}", report.human);
            }
            ExitCode::from(report.exit_code())
        }
        Err(e) => {
            let (status, _, message) = error_report(&e);
            if cli.json {
                eprintln!("{}", error_json(&e));
            } else {
                eprintln!("likes-admin: {message}");
            }
            ExitCode::from(status)
        }
    }
}

//! `likes-admin <command>`: day-2 operations. Exit status: 0 done, 1 drift found (audit),
//! 2 bad usage or input (nothing changed), 3 the operation failed (run it again: every command is
//! idempotent).

use std::process::ExitCode;

use clap::Parser;
use likes_admin::cli::{run, Cli};
use likes_admin::AdminError;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
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
            if report.failed > 0 {
                // Done for every other post; these are named in the report: run again.
                ExitCode::from(3)
            } else if report.clean {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(AdminError::Usage(m)) => {
            eprintln!("likes-admin: {m}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("likes-admin: {e}");
            ExitCode::from(3)
        }
    }
}

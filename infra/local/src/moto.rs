//! Starting moto's DynamoDB + Streams emulator on a free loopback port.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use crate::error::LocalError;

/// The emulator command: `LIKES_MOTO_SERVER` if set (anything that takes moto_server's
/// `-H HOST -p PORT`), else moto's server through `infra/scripts/moto-server.py`, which restores the
/// isolation of DynamoDB transactions (see that file).
fn moto_command() -> (PathBuf, Vec<String>) {
    match std::env::var_os("LIKES_MOTO_SERVER") {
        Some(path) => (PathBuf::from(path), Vec::new()),
        None => (
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../.venv/bin/python"
            )),
            vec![concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/moto-server.py").to_owned()],
        ),
    }
}

fn free_port() -> Result<u16, LocalError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| LocalError::EmulatorStart(e.to_string()))
}

/// Starts the emulator; it is killed when the returned child drops.
pub async fn start() -> Result<(Child, String), LocalError> {
    let (path, script) = moto_command();
    if !path.exists() {
        return Err(LocalError::NoEmulator(path.display().to_string()));
    }
    let port = free_port()?;
    let child = Command::new(&path)
        .args(script)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| LocalError::EmulatorStart(format!("{}: {e}", path.display())))?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        if Instant::now() > deadline {
            return Err(LocalError::EmulatorStart(
                "it did not listen within 30 s".into(),
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok((child, format!("http://{addr}")))
}

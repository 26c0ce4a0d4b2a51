//! The emulator as the tests own it: moto's server on a free port, stopped and resumed at will,
//! and a loopback proxy in front of it that refuses and cuts connections.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{free_port, repo_root, terminate};

/// moto's server, started by the test itself, so that the test can stop it for a while and
/// keep it across restarts of the stack.
pub struct Emulator {
    child: Child,
    pub endpoint: String,
}

impl Emulator {
    pub fn start() -> Self {
        let port = free_port();
        let root = repo_root();
        let mut child = Command::new(root.join(".venv/bin/python"))
            .arg(root.join("infra/scripts/moto-server.py"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the emulator starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the emulator did not listen");
            assert!(
                child.try_wait().ok().flatten().is_none(),
                "the emulator exited"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        }
    }

    pub fn port(&self) -> u16 {
        self.endpoint
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }

    /// Stops the process (SIGSTOP): connections hang, nothing is answered, nothing is lost.
    pub fn pause(&self) {
        let _ = Command::new("kill")
            .args(["-STOP", &self.child.id().to_string()])
            .status();
    }

    pub fn resume(&self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.child.id().to_string()])
            .status();
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.resume();
        terminate(&mut self.child);
    }
}

/// A loopback TCP proxy in front of the emulator: stopping it refuses new connections and cuts
/// open ones, which is what a stopped emulator looks like from the stack, without losing the
/// emulator's (in-memory) data. Writes in flight either reached the emulator or did not: none
/// lands later, as one would from a process merely suspended.
pub struct Proxy {
    pub port: u16,
    target: u16,
    running: Arc<std::sync::atomic::AtomicBool>,
    generation: Arc<std::sync::atomic::AtomicU64>,
}

impl Proxy {
    pub fn start(target: u16) -> Self {
        let p = Self {
            port: free_port(),
            target,
            running: Arc::default(),
            generation: Arc::default(),
        };
        p.listen();
        p
    }

    fn listen(&self) {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind(("127.0.0.1", self.port)).expect("proxy port");
        listener.set_nonblocking(true).expect("nonblocking");
        self.running.store(true, Ordering::SeqCst);
        let (running, generation, target) =
            (self.running.clone(), self.generation.clone(), self.target);
        let mine = generation.load(Ordering::SeqCst);
        std::thread::spawn(move || {
            while running.load(Ordering::SeqCst) && generation.load(Ordering::SeqCst) == mine {
                match listener.accept() {
                    Ok((client, _)) => {
                        let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                            continue;
                        };
                        let _ = client.set_nonblocking(false);
                        for (from, to) in [
                            (client.try_clone(), server.try_clone()),
                            (server.try_clone(), client.try_clone()),
                        ] {
                            let (Ok(mut from), Ok(mut to)) = (from, to) else {
                                continue;
                            };
                            let (running, generation) = (running.clone(), generation.clone());
                            std::thread::spawn(move || {
                                let _ = from.set_read_timeout(Some(Duration::from_millis(100)));
                                let mut buf = [0u8; 16 * 1024];
                                loop {
                                    if !running.load(Ordering::SeqCst)
                                        || generation.load(Ordering::SeqCst) != mine
                                    {
                                        let _ = from.shutdown(std::net::Shutdown::Both);
                                        let _ = to.shutdown(std::net::Shutdown::Both);
                                        return;
                                    }
                                    match from.read(&mut buf) {
                                        Ok(0) => {
                                            let _ = to.shutdown(std::net::Shutdown::Write);
                                            return;
                                        }
                                        Ok(n) => {
                                            if to.write_all(&buf[..n]).is_err() {
                                                return;
                                            }
                                        }
                                        Err(e)
                                            if matches!(
                                                e.kind(),
                                                std::io::ErrorKind::WouldBlock
                                                    | std::io::ErrorKind::TimedOut
                                            ) => {}
                                        Err(_) => return,
                                    }
                                }
                            });
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(_) => return,
                }
            }
        });
    }

    /// Refuses connections and cuts the open ones.
    pub fn stop(&self) {
        use std::sync::atomic::Ordering;
        self.running.store(false, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
        // The listener closes when its thread sees the flag.
        std::thread::sleep(Duration::from_millis(50));
    }

    pub fn restart(&self) {
        self.listen();
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

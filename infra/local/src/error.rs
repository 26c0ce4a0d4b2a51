//! What can stop the local stack from starting, each with what to do about it.

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error("port {0} is busy: stop what uses it, or run with LIKES_PORT=<another port>")]
    PortBusy(u16),
    #[error("cannot listen on 127.0.0.1:{0}: {1}")]
    Listen(u16, std::io::Error),
    #[error("the emulator is not installed at {0}: run `make dev` (it installs it into .venv), or set LIKES_MOTO_SERVER, or point LIKES_DYNAMODB_ENDPOINT at a running emulator")]
    NoEmulator(String),
    #[error("could not start the emulator: {0}")]
    EmulatorStart(String),
    #[error("DynamoDB setup failed: {0}")]
    Setup(String),
}

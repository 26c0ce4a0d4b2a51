//! End-to-end tests of `make dev`: the `likes-local` binary, started by each test on free ports with
//! its emulator; the API over HTTP, the browser, the chaos run, the admin commands, the template's
//! settings. One binary, a module per suite. A target of `likes-local`, so that cargo builds the
//! stack's binary for it.

mod admin;
mod browser;
mod chaos;
mod common;
mod events;
mod http_api;
mod limits;
mod reactions;
mod real_provider;
mod roles;
mod shards;
mod smoke;
mod template;

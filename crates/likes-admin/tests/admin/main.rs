//! `likes-admin`'s integration tests, one binary: the command line as operators run it, and the
//! repair lease.

mod cli;
mod lease;

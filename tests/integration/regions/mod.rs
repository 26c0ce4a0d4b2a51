//! Two regions (docs/regions.md), one suite: the home gate on one emulator (`homes`), and the
//! simulation of two (`likes_harness::regions`) — an unplanned failover with audit and recount
//! per region (`failover`), a planned move under the linearizability checker (`planned_move`),
//! split brain (`split`), an account erased during a cut (`erase`), and a broken replicator the
//! checks catch (`mutants`). Each simulation starts its own second emulator, so they run side
//! by side.

mod erase;
mod failover;
mod homes;
mod mutants;
mod planned_move;
mod split;

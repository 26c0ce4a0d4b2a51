//! Integration tests that span crates, against moto's emulator (or in memory, for the models): one
//! binary, a module per suite. A target of `likes-harness`, whose rigs they use.

mod aggregator;
mod aggregator_model;
mod aggregator_props;
mod among;
mod erase;
mod erase_requests;
mod errors;
mod ids_model;
mod liker_ids;
mod linearizable;
mod lost_answers;
mod one_effect;
mod policies;
mod reactions;
mod reactions_linearizable;
mod read_path;
mod recount_model;
mod regions;
mod repair_check;
mod repair_model;
mod repair_race;
mod sample_events;
mod shared_counts;
mod single_mode;
mod strong_reads;
mod summary_mine;
mod suspensions;
mod write_path;

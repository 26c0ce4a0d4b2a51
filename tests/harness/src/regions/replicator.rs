//! MREC global tables between two regions' Likes tables, as AWS documents them (docs/regions.md
//! #sources: *How DynamoDB global tables work*, *Overview of global tables*):
//! - **Asynchronous, per item.** A change is sent to the other region after a delay (drawn per
//!   change, within [`Delays`]); items travel apart, so cross-item order may differ.
//! - **Merged changes.** Changes of one item still waiting to be sent travel as one write: the
//!   item as it last was. The other region's stream shows what that one write did there.
//! - **Last writer wins.** Every change carries its origin's time; a region keeps the later
//!   one, and a losing write changes nothing (so leaves no stream record).
//! - **Replicated writes are changes of the replica** and stream there like local ones; they
//!   are not sent back.
//! - **A region cut off** ([`Replicator::cut`]) keeps taking writes; what it has not sent waits,
//!   and lands when it rejoins, item by item, each settled by last writer wins.
//!
//! Each region's changes are learnt from its own stream (a reader of its own, apart from the
//! aggregator's), the item read as it is then. The replicator tells its own writes' records
//! from local ones by counting, per item, the records its writes will cause.
//!
//! **Its limit: one item written in both regions at once.** A replicated write is
//! unconditional and checked only against changes already learnt, so a local write of the same
//! item landing in the same instant could be overwritten (or its record taken for the
//! replicator's), where AWS would settle it by its own times. Home regions keep this from
//! happening, and the test writes nothing while a cut region's changes land; forced conflicts
//! (conditional replicated writes, retried after learning) are not built.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::{Item, Region, StreamTail};

/// xorshift64*: the delays' draws, seeded (no dependency for a test's dice).
struct Uniform(u64);

impl Uniform {
    fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// An item's key: (post_bucket, user_id).
type Key = (String, String);

/// How long a change waits before it is sent: drawn in [min, max] per change.
#[derive(Debug, Clone, Copy)]
pub struct Delays {
    pub min: Duration,
    pub max: Duration,
}

/// The write that made an item what it is in a region: its origin's time (the stream record's
/// creation time: moto's, to the ms, on the one clock both emulators share; AWS keeps its own
/// time per write, which streams do not show), then a tie-breaking sequence, and region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Version {
    at: (u128, u64),
    origin: usize,
}

struct Pending {
    version: Version,
    state: Option<Item>,
    due: Instant,
}

#[derive(Default)]
struct State {
    /// Per region, each item's current version there.
    versions: [HashMap<Key, Version>; 2],
    /// Per region, the records the replicator's own writes will still cause, per item.
    expected: [HashMap<Key, usize>; 2],
    /// Per region, whether each item exists there, as its stream's records tell.
    present: [HashMap<Key, bool>; 2],
    /// Per origin region, the changes waiting to be sent to the other, one per item.
    pending: [HashMap<Key, Pending>; 2],
    sequence: u64,
}

/// What the replicator did, for the tests to show.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Changes that joined a change of the same item still waiting: sent as one write.
    pub merged: usize,
    /// Writes sent and applied.
    pub applied: usize,
    /// Writes sent that lost to a later write in the other region: nothing changed.
    pub lost: usize,
}

pub struct Replicator {
    regions: [Arc<Region>; 2],
    tails: [Mutex<StreamTail>; 2],
    delays: Delays,
    cut: AtomicBool,
    /// Off only for a mutant: every change applied as it arrives, whatever its time.
    last_writer_wins: AtomicBool,
    /// One step at a time: each region's records are learnt in their stream's order.
    stepping: Mutex<()>,
    state: Mutex<State>,
    stats: std::sync::Mutex<Stats>,
    rng: std::sync::Mutex<Uniform>,
}

impl Replicator {
    pub async fn new(regions: [Arc<Region>; 2], delays: Delays, seed: u64) -> Arc<Self> {
        let tails = [
            Mutex::new(StreamTail::open(&regions[0].endpoint, &regions[0].stream_arn).await),
            Mutex::new(StreamTail::open(&regions[1].endpoint, &regions[1].stream_arn).await),
        ];
        Arc::new(Self {
            regions,
            tails,
            delays,
            cut: AtomicBool::new(false),
            last_writer_wins: AtomicBool::new(true),
            stepping: Mutex::new(()),
            state: Mutex::new(State::default()),
            stats: std::sync::Mutex::new(Stats::default()),
            rng: std::sync::Mutex::new(Uniform::new(seed)),
        })
    }

    /// A mutant (false): a replicator that applies every change as it arrives, so that a
    /// test can show its checks see last writer wins missing.
    pub fn last_writer_wins(&self, on: bool) {
        self.last_writer_wins.store(on, Ordering::SeqCst);
    }

    /// Cuts the regions apart (true) or rejoins them (false).
    pub fn cut(&self, cut: bool) {
        self.cut.store(cut, Ordering::SeqCst);
    }

    pub fn stats(&self) -> Stats {
        *self.stats.lock().expect("stats")
    }

    /// Changes learnt and not yet applied in the other region.
    pub async fn waiting(&self) -> usize {
        let state = self.state.lock().await;
        state.pending[0].len() + state.pending[1].len()
    }

    /// One round: learn both regions' changes, then send what is due both ways. Returns how
    /// many changes were learnt or sent.
    pub async fn step(&self) -> usize {
        let _one = self.stepping.lock().await;
        // Whether the regions are joined, as the round starts: a rejoin mid-round must not
        // send changes before the round has learnt every write made during the cut (a local
        // write not yet learnt would be overwritten, its record taken for the replicator's).
        let joined = !self.cut.load(Ordering::SeqCst);
        let mut moved = 0;
        for r in 0..2 {
            moved += self.learn(r).await;
        }
        if joined {
            for r in 0..2 {
                moved += self.send(r).await;
            }
        }
        moved
    }

    /// Runs [`Replicator::step`] every 20 ms until `stop` is set.
    pub async fn run(self: Arc<Self>, stop: Arc<AtomicBool>) {
        while !stop.load(Ordering::SeqCst) {
            self.step().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn delay(&self) -> Duration {
        let u = self.rng.lock().expect("rng").next();
        self.delays.min + (self.delays.max - self.delays.min).mul_f64(u)
    }

    /// Reads region `r`'s stream: each record not caused by the replicator is a local change,
    /// given a version now and queued for the other region with the item as it is now.
    async fn learn(&self, r: usize) -> usize {
        let changes = self.tails[r].lock().await.read().await;
        let mut learnt = 0;
        for change in changes {
            let key = (change.post_bucket, change.user_id);
            let mut state = self.state.lock().await;
            let was = state.present[r].get(&key).copied().unwrap_or(false);
            let is = match change.name.as_str() {
                "INSERT" => true,
                "REMOVE" => false,
                _ => was,
            };
            state.present[r].insert(key.clone(), is);
            if let Some(n) = state.expected[r].get_mut(&key).filter(|n| **n > 0) {
                *n -= 1;
                continue;
            }
            // A record that changes no item's presence (moto streams two INSERTs for an
            // UpdateItem that creates an item, DynamoDB one): nothing new to send.
            if change.name != "MODIFY" && was == is {
                continue;
            }
            let now = self.regions[r].get(&key).await;
            state.sequence += 1;
            let version = Version {
                at: (change.at_us, state.sequence),
                origin: r,
            };
            state.versions[r].insert(key.clone(), version);
            let due = Instant::now() + self.delay();
            let merged = match state.pending[r].get_mut(&key) {
                Some(p) => {
                    p.version = version;
                    p.state = now;
                    true
                }
                None => {
                    let p = Pending {
                        version,
                        state: now,
                        due,
                    };
                    state.pending[r].insert(key, p);
                    false
                }
            };
            if merged {
                self.stats.lock().expect("stats").merged += 1;
            }
            learnt += 1;
        }
        learnt
    }

    /// Sends region `from`'s due changes to the other region, each applied there only if it
    /// is later than the item's version there.
    async fn send(&self, from: usize) -> usize {
        let to = 1 - from;
        let mut state = self.state.lock().await;
        let now = Instant::now();
        let due: Vec<Key> = state.pending[from]
            .iter()
            .filter(|(_, p)| p.due <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in &due {
            let Some(p) = state.pending[from].remove(key) else {
                continue;
            };
            let wins = self.last_writer_wins.load(Ordering::SeqCst);
            if wins && state.versions[to].get(key).is_some_and(|v| *v > p.version) {
                self.stats.lock().expect("stats").lost += 1;
                continue;
            }
            let target = &self.regions[to];
            if target.get(key).await != p.state {
                target.put_state(key, p.state.as_ref()).await;
                *state.expected[to].entry(key.clone()).or_default() += 1;
            }
            state.versions[to].insert(key.clone(), p.version);
            self.stats.lock().expect("stats").applied += 1;
        }
        due.len()
    }
}

impl Region {
    /// The item as it is (a consistent read).
    pub async fn get(&self, key: &Key) -> Option<Item> {
        self.tables
            .client
            .get_item()
            .table_name(&self.tables.likes_table)
            .key("post_bucket", AttributeValue::S(key.0.clone()))
            .key("user_id", AttributeValue::S(key.1.clone()))
            .consistent_read(true)
            .send()
            .await
            .expect("a replicator's read")
            .item
            .map(Item)
    }

    /// Makes the item `state` (absent when None), unconditionally: a replicated write.
    async fn put_state(&self, key: &Key, state: Option<&Item>) {
        match state {
            Some(item) => {
                self.tables
                    .client
                    .put_item()
                    .table_name(&self.tables.likes_table)
                    .set_item(Some(item.0.clone()))
                    .send()
                    .await
                    .expect("a replicated put");
            }
            None => {
                self.tables
                    .client
                    .delete_item()
                    .table_name(&self.tables.likes_table)
                    .key("post_bucket", AttributeValue::S(key.0.clone()))
                    .key("user_id", AttributeValue::S(key.1.clone()))
                    .send()
                    .await
                    .expect("a replicated delete");
            }
        }
    }
}

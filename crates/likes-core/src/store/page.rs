//! The paging rules of the listings, free of DynamoDB so that they can be tested against a
//! model: "fetch one more than asked", the cut of a tie group at a page edge, and the merge of a
//! post's 16 buckets into one newest-first order.

use super::LikerPos;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Whether anything follows the last item.
    pub more: bool,
}

/// How many items a listing reads for a page of `limit`: one more, so that the last page ends
/// with "nothing follows" instead of sending the client to fetch an empty extra page.
pub fn fetch_size(limit: usize) -> usize {
    limit.saturating_add(1)
}

/// Cuts what was read (at most [`fetch_size`] items, in listing order) into a page.
pub fn cut<T>(mut items: Vec<T>, limit: usize) -> Page<T> {
    let more = items.len() > limit;
    items.truncate(limit);
    Page { items, more }
}

/// One bucket's share of a "who liked P" page, read from the `by_time` index.
///
/// The index orders by `liked_at` only: items with equal `liked_at` come in no defined order.
/// The listing's order is `(liked_at, user_id)` descending, a total order, so a tie group at the
/// page edge is read to its end before the page is cut, and items tied with the cursor's
/// `liked_at` are filtered by user id here rather than by the index.
#[derive(Debug)]
pub struct BucketScan {
    limit: usize,
    after: Option<LikerPos>,
    found: Vec<LikerPos>,
    more: bool,
}

impl BucketScan {
    pub fn new(limit: usize, after: Option<LikerPos>) -> Self {
        Self {
            limit,
            after,
            found: Vec::new(),
            more: false,
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The newest `liked_at` the index read must include (`liked_at <= t`), if any: items
    /// tied with the cursor's time may still come after it.
    pub fn start_at(&self) -> Option<&str> {
        self.after.as_ref().map(|a| a.liked_at.as_str())
    }

    /// Feeds the next item in index order (`liked_at` descending, ties in any order). Returns
    /// `false` once the page is complete and nothing more needs to be read.
    pub fn offer(&mut self, pos: LikerPos) -> bool {
        if self.after.as_ref().is_some_and(|a| pos >= *a) {
            return true;
        }
        // Enough, and this item is past the edge's tie group: everything needed has been seen.
        if self.found.len() >= self.limit
            && self.found.last().is_some_and(|l| pos.liked_at < l.liked_at)
        {
            self.more = true;
            return false;
        }
        self.found.push(pos);
        true
    }

    /// The bucket's page, in listing order; `more` if the bucket holds anything after it.
    pub fn finish(mut self) -> Page<LikerPos> {
        self.found.sort_unstable_by(|a, b| b.cmp(a));
        let mut page = cut(self.found, self.limit);
        page.more |= self.more;
        page
    }
}

/// Merges the buckets' pages into the post's page: the newest `limit` of their union. Each
/// bucket page holds that bucket's newest `limit`, so the post's newest `limit` are among them.
pub fn merge(pages: impl IntoIterator<Item = Page<LikerPos>>, limit: usize) -> Page<LikerPos> {
    let mut merged = Vec::new();
    let mut more = false;
    for page in pages {
        more |= page.more;
        merged.extend(page.items);
    }
    merged.sort_unstable_by(|a, b| b.cmp(a));
    let mut page = cut(merged, limit);
    page.more |= more;
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bucket::{bucket_of, BUCKETS};
    use crate::ids::UserId;
    use proptest::prelude::*;

    /// Plays the `by_time` index of one bucket: `liked_at <= start` descending, ties in an order
    /// chosen by `scramble` (the index promises none), fed to the scan until it stops.
    fn read_bucket(items: &[LikerPos], mut scan: BucketScan, scramble: u64) -> Page<LikerPos> {
        let mut order: Vec<&LikerPos> = items
            .iter()
            .filter(|p| scan.start_at().is_none_or(|t| p.liked_at.as_str() <= t))
            .collect();
        let key =
            |p: &LikerPos| crate::bucket::fnv1a64(p.user_id.to_string().as_bytes()) ^ scramble;
        order.sort_by(|a, b| b.liked_at.cmp(&a.liked_at).then(key(a).cmp(&key(b))));
        for p in order {
            if !scan.offer(p.clone()) {
                break;
            }
        }
        scan.finish()
    }

    fn likers() -> impl Strategy<Value = Vec<LikerPos>> {
        // Few distinct timestamps, so that tie groups are large and cross page edges.
        prop::collection::btree_map(any::<u128>(), 0u8..4, 0..120).prop_map(|m| {
            m.into_iter()
                .map(|(id, t)| LikerPos {
                    liked_at: format!("2026-12-01T00:00:0{t}.000Z"),
                    user_id: UserId::parse(&format!("u{id:x}")).expect("an id"),
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
        /// Following the cursor through a post's 16 buckets lists every liker exactly once,
        /// newest first, in full pages until the last, which says nothing follows.
        #[test]
        fn paging_lists_every_liker_once_newest_first(
            all in likers(), limit in 1usize..12, scramble in any::<u64>()
        ) {
            let mut buckets: Vec<Vec<LikerPos>> = vec![Vec::new(); usize::from(BUCKETS)];
            for p in &all {
                buckets[usize::from(bucket_of(&p.user_id))].push(p.clone());
            }
            let mut want = all.clone();
            want.sort_by(|a, b| b.cmp(a));

            let mut got = Vec::new();
            let mut after: Option<LikerPos> = None;
            for round in 0.. {
                prop_assert!(round <= all.len(), "paging does not end");
                let pages = buckets.iter().enumerate().map(|(i, b)| {
                    read_bucket(b, BucketScan::new(limit, after.clone()), scramble ^ i as u64)
                });
                let page = merge(pages, limit);
                let expected_len = (want.len() - got.len()).min(limit);
                prop_assert_eq!(page.items.len(), expected_len);
                got.extend(page.items.iter().cloned());
                prop_assert_eq!(page.more, got.len() < want.len());
                if !page.more {
                    break;
                }
                after = page.items.last().cloned();
            }
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn cut_keeps_the_limit_and_says_whether_more_follow() {
        assert_eq!(
            cut(vec![1, 2, 3], 2),
            Page {
                items: vec![1, 2],
                more: true
            }
        );
        assert_eq!(
            cut(vec![1, 2], 2),
            Page {
                items: vec![1, 2],
                more: false
            }
        );
        assert_eq!(fetch_size(2), 3);
    }
}

//! A linearizability check for one (user, post) in `single` reaction mode: one register
//! holding a kind or nothing, searched by `crate::linear::wing_gong`, with the mode's rules:
//! a reaction of kind K on a register holding K is `changed: false`; on anything else it is
//! `changed: true`, the register becomes K, and `replaced` names what it held; removing K
//! empties a register holding K (`changed: true`) and finds anything else unchanged.

pub use crate::linear::Answer;

/// A kind, as the test numbers them.
pub type Kind = u8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// A reaction (`PUT`), or its removal (`DELETE`).
    pub put: bool,
    pub kind: Kind,
    pub start: u64,
    pub end: u64,
    pub answer: Answer,
    /// For a `PUT` answered `changed: true`: the kind it said it replaced.
    pub replaced: Option<Kind>,
}

/// The register after `op` takes effect on `held`, if its answer allows that.
fn step(op: &Op, held: Option<Kind>) -> Vec<Option<Kind>> {
    let target = op.put.then_some(op.kind);
    let changes = if op.put {
        held != Some(op.kind)
    } else {
        held == Some(op.kind)
    };
    match op.answer {
        Answer::Changed(true) if changes && (!op.put || op.replaced == held) => vec![target],
        Answer::Changed(false) if !changes => vec![held],
        // No read is recorded in a reactions history.
        Answer::Changed(_) | Answer::Saw(_) => vec![],
        Answer::Unknown if changes => vec![target, held],
        Answer::Unknown | Answer::NoEffect => vec![held],
    }
}

/// Whether `ops` is linearizable, from an empty register to `last`.
pub fn linearizable(ops: &[Op], last: Option<Kind>) -> bool {
    let ops: Vec<Op> = ops
        .iter()
        .copied()
        .filter(|o| o.answer != Answer::NoEffect)
        .collect();
    let spans: Vec<(u64, u64)> = ops.iter().map(|o| (o.start, o.end)).collect();
    crate::linear::wing_gong(&spans, None, last, |i, held| step(&ops[i], held))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(kind: Kind, start: u64, end: u64, answer: Answer, replaced: Option<Kind>) -> Op {
        Op {
            put: true,
            kind,
            start,
            end,
            answer,
            replaced,
        }
    }

    #[test]
    fn replacements_name_what_they_replaced() {
        let a = put(1, 0, 1, Answer::Changed(true), None);
        let b = put(2, 2, 3, Answer::Changed(true), Some(1));
        assert!(linearizable(&[a, b], Some(2)));
        assert!(!linearizable(&[a, b], Some(1)), "final state");
        let wrong = put(2, 2, 3, Answer::Changed(true), None);
        assert!(!linearizable(&[a, wrong], Some(2)), "replaced nothing?");
        let again = put(2, 4, 5, Answer::Changed(false), None);
        assert!(linearizable(&[a, b, again], Some(2)));
    }

    #[test]
    fn two_concurrent_reactions_cannot_both_replace_nothing() {
        let a = put(1, 0, 10, Answer::Changed(true), None);
        let b = put(2, 1, 9, Answer::Changed(true), None);
        assert!(!linearizable(&[a, b], Some(1)));
        assert!(!linearizable(&[a, b], Some(2)));
        let b = put(2, 1, 9, Answer::Changed(true), Some(1));
        assert!(linearizable(&[a, b], Some(2)));
    }

    #[test]
    fn removal_of_another_kind_changes_nothing() {
        let a = put(1, 0, 1, Answer::Changed(true), None);
        let del = Op {
            put: false,
            kind: 2,
            start: 2,
            end: 3,
            answer: Answer::Changed(true),
            replaced: None,
        };
        assert!(!linearizable(&[a, del], None));
        assert!(!linearizable(&[a, del], Some(1)));
        let del = Op {
            answer: Answer::Changed(false),
            ..del
        };
        assert!(linearizable(&[a, del], Some(1)));
    }
}

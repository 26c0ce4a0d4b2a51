#!/usr/bin/env python3
"""The Python peer of the count aggregator's hot path, for a side-by-side benchmark.

Per event file it does what functions/count-aggregator/src/batch.rs does, the way a typical
Python Lambda would: json.loads the DynamoDB stream event, deserialize each record's Keys with
boto3's TypeDeserializer, and group the INSERT (+1) / REMOVE (-1) records by post_bucket (stream
order inside a group, groups in order of first appearance) as (sequence number as int, delta,
creation time in epoch seconds), with each group's delta sum and first/last sequence numbers.
MODIFY records and control items (user_id starting with "~") are ignored; records without a
valid sequence number or post_bucket key are skipped; a record whose sequence number is not above
the last one of its group (delivered twice within the batch) is counted once, as in batch.rs.

With --check the summary is one line of compact JSON, members in this order:
{"records":N,"ignored":I,"skipped":S,"groups":[["<post_bucket>",<delta_sum>,"<first_seq>",
"<last_seq>",<n_records>],...]}; N counts the grouped records; a sequence number is printed as
the integer it is (no leading zeros). Timing counts every record of the event.

    peer.py EVENT.json --check          print the canonical JSON summary (to compare with Rust)
    peer.py EVENT.json [--seconds 3]    time decode+group, one line of records/s

Needs python3.11 and boto3 (tests/bench/requirements.txt). Exit code 2 for a bad command line
or a missing or malformed event file.
"""

import argparse
import json
import platform
import re
import sys
import time

try:
    import boto3
    from boto3.dynamodb.types import TypeDeserializer
except ImportError:
    sys.stderr.write(
        "peer.py: boto3 is not installed: run it with the venv's python "
        "(python3.11 -m venv /tmp/peer-venv && "
        "/tmp/peer-venv/bin/pip install -r tests/bench/requirements.txt)\n"
    )
    sys.exit(2)

# "<post_id>#<0..15>": post id 1 to 128 of [A-Za-z0-9._:|@+=-] ('#' is not among them, so this is
# split_once('#')), bucket 0..15 with no leading zero, no sign, no space (likes_core::split_key).
KEY = re.compile(r"[A-Za-z0-9._:|@+=\-]{1,128}#(?:[0-9]|1[0-5])")
# 1 to 40 ASCII digits (likes_core::seq::SeqNo::parse); int() alone would also take "_", spaces
# and non-ASCII digits.
SEQ = re.compile(r"[0-9]{1,40}")
DELTA = {"INSERT": 1, "REMOVE": -1}
PK, SK = "post_bucket", "user_id"

_deserialize = TypeDeserializer().deserialize  # made once, as a Lambda does at import time


def group_records(records):
    """The records' groups {post_bucket: [(seq, delta, created), ...]}, ignored, skipped,
    repeated. As batch.rs: absent fields are tolerated, the record is then ignored or skipped."""
    groups = {}  # a dict keeps insertion order: groups in order of first appearance
    ignored = skipped = repeated = 0
    for record in records:
        delta = DELTA.get(record.get("eventName"))
        if delta is None:  # MODIFY: nothing to count
            ignored += 1
            continue
        change = record.get("dynamodb")
        if change is None:
            skipped += 1
            continue
        keys = {name: _deserialize(value) for name, value in (change.get("Keys") or {}).items()}
        user = keys.get(SK)
        if isinstance(user, str) and user.startswith("~"):  # a control item: no user id can
            ignored += 1
            continue
        seq = change.get("SequenceNumber")
        key = keys.get(PK)
        if not (
            isinstance(seq, str)
            and SEQ.fullmatch(seq)
            and isinstance(key, str)
            and KEY.fullmatch(key)
        ):
            skipped += 1  # can never be applied
            continue
        seq = int(seq)
        # Epoch seconds, as an integer (batch.rs keeps `created as i64`, 0 when absent).
        created = int(change.get("ApproximateCreationDateTime") or 0)
        group = groups.get(key)
        if group is None:
            groups[key] = [(seq, delta, created)]
        elif group[-1][0] >= seq:  # delivered twice within the batch: counted once
            repeated += 1
        else:
            group.append((seq, delta, created))
    return groups, ignored, skipped, repeated


def decode_and_group(text):
    """The measured work: decode the event, group it, sum each group.

    Returns (records in the event, ignored, skipped,
             [(post_bucket, delta_sum, first_seq, last_seq, changes), ...])."""
    records = json.loads(text)["Records"]
    groups, ignored, skipped, _repeated = group_records(records)
    summary = [
        (key, sum(delta for _, delta, _ in changes), changes[0][0], changes[-1][0], changes)
        for key, changes in groups.items()
    ]
    return len(records), ignored, skipped, summary


def malformed(text):
    """Why decode_and_group failed on the text, naming the place."""
    try:
        event = json.loads(text)
    except ValueError as e:
        return f"not JSON: {e}"
    if not isinstance(event, dict):
        return f"the top level is a JSON {type(event).__name__}, not an object"
    if "Records" not in event:
        return 'no "Records" member'
    if not isinstance(event["Records"], list):
        return '"Records" is not a list'
    for i, record in enumerate(event["Records"]):
        try:
            if not isinstance(record, dict):
                raise TypeError("not an object")
            if not isinstance(record.get("dynamodb") or {}, dict):
                raise TypeError('"dynamodb" is not an object')
            if not isinstance((record.get("dynamodb") or {}).get("Keys") or {}, dict):
                raise TypeError('"Keys" is not an object')
            group_records([record])
        except KeyError as e:
            return f"Records[{i}]: no {e} member"
        except Exception as e:  # noqa: BLE001 - whatever it is, it names the record
            return f"Records[{i}]: {type(e).__name__}: {e}"
    return "an unexpected shape"


def load(parser, path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        parser.error(f"cannot read event file {path}: {e.strerror or e}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        parser.error(f"malformed event file {path}: not UTF-8 ({e})")
    try:
        result = decode_and_group(text)
    except Exception:  # noqa: BLE001 - diagnosed below, outside the measured path
        parser.error(f"malformed event file {path}: {malformed(text)}")
    return text, result


def canonical(result):
    n, ignored, skipped, groups = result
    return json.dumps(
        {
            "records": sum(len(changes) for *_, changes in groups),
            "ignored": ignored,
            "skipped": skipped,
            "groups": [
                [key, delta_sum, str(first), str(last), len(changes)]
                for key, delta_sum, first, last, changes in groups
            ],
        },
        separators=(",", ":"),
        ensure_ascii=False,
    )


def main():
    parser = argparse.ArgumentParser(
        prog="peer.py",
        description="Python peer of the count aggregator's decode+group step (benchmark).",
    )
    parser.add_argument("file", help="a Lambda DynamoDB stream event, JSON")
    parser.add_argument(
        "--check",
        action="store_true",
        help="print the canonical JSON summary instead of timing",
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=3.0,
        help="time for at least this many seconds, after one warm-up pass (default 3)",
    )
    args = parser.parse_args()
    if not args.seconds > 0:
        parser.error(f"--seconds must be positive, got {args.seconds}")

    text, result = load(parser, args.file)  # this is also the warm-up pass
    if args.check:
        print(canonical(result))
        return
    n = result[0]
    if n == 0:
        parser.error(f"event file {args.file} has no records: nothing to time")

    passes = 0
    start = time.perf_counter()
    while True:
        decode_and_group(text)
        passes += 1
        elapsed = time.perf_counter() - start
        if elapsed >= args.seconds:
            break
    per_record = elapsed / (passes * n)
    print(
        f"python peer: {args.file} {n} records, {1 / per_record:.0f} records/s "
        f"({per_record * 1e6:.3f} µs/record), python {platform.python_version()}, "
        f"boto3 {boto3.__version__}"
    )


if __name__ == "__main__":
    main()

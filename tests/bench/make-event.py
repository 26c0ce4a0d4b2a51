#!/usr/bin/env python3
"""Writes a Lambda DynamoDB stream event (KEYS_ONLY, Likes table) to try tests/bench/peer.py on.

    make-event.py --records 1000 --seed 1 --out /tmp/event-1000.json

Zipf popularity (s = 1) over 2,000 post ids, a random user for each like so that buckets vary,
80 % INSERT / 20 % REMOVE (a REMOVE takes back an earlier like of the same post when there is
one), sequence numbers increasing from 100000000000000000000 with random gaps. The bucket of a
post_bucket key is FNV-1a-64 of the user id's UTF-8 bytes mod 16, as likes_core::bucket_of.
Same seed, same file. Standard library only.
"""

import argparse
import bisect
import itertools
import json
import random
import sys
import uuid

POSTS = 2_000
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK = (1 << 64) - 1
SEQ_START = 100_000_000_000_000_000_000
CREATED_START = 1_796_000_000
ARN = (
    "arn:aws:dynamodb:us-east-1:123456789012:table/likes-LikesTable-EXAMPLE/"
    "stream/2026-11-30T20:00:00.000"
)


def fnv1a64(data: bytes) -> int:
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK
    return h


def bucket_of(user: str) -> int:
    return fnv1a64(user.encode("utf-8")) % 16


def random_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def random_user(rng: random.Random) -> str:
    # Mostly UUIDs (Cognito subs), some other identity providers' subjects.
    kind = rng.random()
    if kind < 0.7:
        return random_uuid(rng)
    if kind < 0.85:
        return "auth0|" + "".join(rng.choice("0123456789abcdef") for _ in range(24))
    return "google-oauth2|" + str(rng.randrange(10**20, 10**21))


def make_event(records: int, seed: int) -> dict:
    rng = random.Random(seed)
    posts = [random_uuid(rng) for _ in range(POSTS)]
    cumulative = list(itertools.accumulate(1.0 / k for k in range(1, POSTS + 1)))
    likers = {}  # post -> users who like it now
    seq = SEQ_START
    created = float(CREATED_START)
    out = []
    for _ in range(records):
        post = posts[bisect.bisect_left(cumulative, rng.random() * cumulative[-1])]
        if rng.random() < 0.8:
            name, user = "INSERT", random_user(rng)
            likers.setdefault(post, []).append(user)
        else:
            name, now = "REMOVE", likers.get(post)
            if now:
                user = now.pop(rng.randrange(len(now)))
            else:  # a like from before this stream window
                user = random_user(rng)
        seq += rng.randint(1, 1_000_000)
        created += rng.choice((0.0, 0.0, 0.0, 1.0))
        post_bucket = f"{post}#{bucket_of(user)}"
        out.append(
            {
                "eventID": "%032x" % rng.getrandbits(128),
                "eventName": name,
                "eventVersion": "1.1",
                "eventSource": "aws:dynamodb",
                "awsRegion": "us-east-1",
                "dynamodb": {
                    "ApproximateCreationDateTime": created,
                    "Keys": {"post_bucket": {"S": post_bucket}, "user_id": {"S": user}},
                    "SequenceNumber": str(seq),
                    "SizeBytes": len("post_bucket") + len(post_bucket) + len("user_id") + len(user) + 8,
                    "StreamViewType": "KEYS_ONLY",
                },
                "eventSourceARN": ARN,
            }
        )
    return {"Records": out}


def main():
    parser = argparse.ArgumentParser(prog="make-event.py", description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1000, help="number of records (default 1000)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--out", default="-", help="output file (default: standard output)")
    args = parser.parse_args()
    if args.records < 0:
        parser.error(f"--records must be 0 or more, got {args.records}")
    assert fnv1a64(b"foobar") == 0x85944171F73967E8
    assert bucket_of("auth0|5f7c8ec7c33c6c004bbafe82") == 12
    text = json.dumps(make_event(args.records, args.seed), separators=(",", ":"))
    if args.out == "-":
        sys.stdout.write(text + "\n")
    else:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()

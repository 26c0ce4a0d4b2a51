"""moto's server, with DynamoDB's transaction isolation restored.

moto rolls a failed TransactWriteItems back by putting back a deep copy of every table it
touched, taken when the transaction began -- stream included. Three consequences, all fixed
here:

- Its server runs requests on threads, so that copy also erased every write other requests made
  meanwhile (and their stream records): concurrent likes vanished when one named like found the
  post already liked. Requests now run one at a time, which makes the copy exact; the emulator
  is bound by Python's global lock anyway, so this costs little throughput.
- A stream reader's shard iterator keeps the shard object it was made from: after a rollback it
  went on reading the discarded table's shard, records of the cancelled transaction included
  (a named unlike's REMOVE whose like was put back).
- Each transaction copied whole tables: a burst with named requests cost time and memory
  quadratic in the table's size.

So a transaction here keeps no copy of its tables: before it runs, the items it names and the
length of each table's stream are noted; if it fails, those items are put back as they were
and the records it streamed removed. The table and its shard stay the same objects.

Real DynamoDB isolates transactions, and a cancelled one writes no stream record.

Usage is moto_server's: moto-server.py -H 127.0.0.1 -p PORT
"""

import sys
import threading

from moto import server

_one_at_a_time = threading.Lock()
_dispatch = server.DomainDispatcherApplication.__call__


def _serialised(self, environ, start_response):
    with _one_at_a_time:
        return _dispatch(self, environ, start_response)


server.DomainDispatcherApplication.__call__ = _serialised

import copy as _copy  # noqa: E402

import moto.dynamodb.models as _models  # noqa: E402
from moto.dynamodb.models import DynamoDBBackend  # noqa: E402
from moto.dynamodb.models.dynamo_type import DynamoType  # noqa: E402
from moto.dynamodb.models.table import Table  # noqa: E402

_transact = DynamoDBBackend.transact_write_items


class _TablesNotCopied:
    """moto's module `copy`, but a table is not deep-copied: the rollback below keeps what a
    transaction touched instead, so that a transaction costs what it writes, not the size of
    every table it names (a whole-table copy per named like made a burst quadratic: moto grew
    past 13 GB on 20,000 requests)."""

    @staticmethod
    def deepcopy(x, memo=None):
        return x if isinstance(x, Table) else _copy.deepcopy(x, memo)

    def __getattr__(self, name):
        return getattr(_copy, name)


_models.copy = _TablesNotCopied()


def _key(table, op):
    source = op.get("Key") or op.get("Item") or {}
    hash_key = source.get(table.hash_key_attr)
    range_key = source.get(table.range_key_attr) if table.range_key_attr else None
    if hash_key is None or (table.range_key_attr and range_key is None):
        return None
    return DynamoType(hash_key), (DynamoType(range_key) if range_key else None)


def _transact_with_undo(self, transact_items):
    """A transaction whose failure puts back exactly the items it touched, and removes the
    stream records it wrote (a cancelled transaction writes none on DynamoDB)."""
    undo, shards = [], {}
    for item in transact_items:
        _, op = next(iter(item.items()))
        table = self.tables.get(op.get("TableName"))
        key = _key(table, op) if table is not None else None
        if key is None:
            continue
        before = table.get_item(*key)
        undo.append((table, key, _copy.deepcopy(before)))
        if table.stream_shard is not None and table.name not in shards:
            shards[table.name] = (table.stream_shard, len(table.stream_shard.items))
    try:
        return _transact(self, transact_items)
    except Exception:
        for table, (hash_key, range_key), before in reversed(undo):
            if range_key is not None:
                if before is None:
                    table.items[hash_key].pop(range_key, None)
                else:
                    table.items[hash_key][range_key] = before
            elif before is None:
                table.items.pop(hash_key, None)
            else:
                table.items[hash_key] = before
        for shard, kept in shards.values():
            del shard.items[kept:]
        raise


DynamoDBBackend.transact_write_items = _transact_with_undo

if __name__ == "__main__":
    sys.exit(server.main(sys.argv[1:]))

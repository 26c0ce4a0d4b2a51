"""moto's server, with DynamoDB's transaction isolation restored.

moto rolls a failed TransactWriteItems back by putting back a deep copy of every table it
touched, taken when the transaction began -- stream included. Two consequences, both fixed here:

- Its server runs requests on threads, so that copy also erased every write other requests made
  meanwhile (and their stream records): concurrent likes vanished when one named like found the
  post already liked. Requests now run one at a time, which makes the copy exact; the emulator
  is bound by Python's global lock anyway, so this costs little throughput.
- A stream reader's shard iterator keeps the shard object it was made from: after a rollback it
  went on reading the discarded table's shard, records of the cancelled transaction included
  (a named unlike's REMOVE whose like was put back). The rolled-back table now keeps its shard
  object, with the cancelled transaction's records removed from it.

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

from moto.dynamodb.models import DynamoDBBackend  # noqa: E402

_transact = DynamoDBBackend.transact_write_items


def _transact_keeping_shards(self, transact_items):
    shards = {}
    for item in transact_items:
        _, op = next(iter(item.items()))
        name = op.get("TableName")
        table = self.tables.get(name) if name else None
        if table is not None and getattr(table, "stream_shard", None) is not None:
            shards[name] = (table.stream_shard, len(table.stream_shard.items))
    try:
        return _transact(self, transact_items)
    except Exception:
        for name, (shard, kept) in shards.items():
            restored = self.tables.get(name)
            if restored is not None and restored.stream_shard is not shard:
                del shard.items[kept:]
                shard.table = restored
                restored.stream_shard = shard
        raise


DynamoDBBackend.transact_write_items = _transact_keeping_shards

if __name__ == "__main__":
    sys.exit(server.main(sys.argv[1:]))

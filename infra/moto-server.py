"""moto's server, with DynamoDB's transaction isolation restored.

moto rolls a failed TransactWriteItems back by putting back a deep copy of every table it
touched, taken when the transaction began -- stream included. Its server runs requests on
threads, so that copy also erases every write other requests made meanwhile (and their stream
records): concurrent likes vanish when one named like finds the post already liked. Real
DynamoDB isolates transactions. Running requests one at a time makes moto's rollback exact; the
emulator is bound by Python's global lock anyway, so this costs little throughput.

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

if __name__ == "__main__":
    sys.exit(server.main(sys.argv[1:]))

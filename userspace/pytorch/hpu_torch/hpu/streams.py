# SPDX-License-Identifier: MIT
"""Streams and events.

A stream is an ordered queue of work on a device.  Each device has a default
stream and a pool of others that Stream() hands out in turn (as CUDA's pool);
the thread's current stream of a device is where that device's ops and copies
go.  Work on different streams is ordered only by events (wait_stream,
wait_event).
"""
import torch

from .. import _C
from ._device import _index


class Stream:
    """A stream of device (default: the current one) from the pool."""

    def __init__(self, device=None, priority=0, _id=None):
        self.device_index = _index(device)
        self.stream_id = _C._pool_stream(self.device_index) if _id is None else _id

    @property
    def device(self):
        return torch.device("hpu", self.device_index)

    def wait_event(self, event):
        """Work enqueued on this stream from now on waits for event."""
        event.wait(self)

    def wait_stream(self, stream):
        """Work enqueued on this stream from now on waits for what stream has enqueued."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self):
        return _C._stream_query(self.device_index, self.stream_id)

    def synchronize(self):
        _C._stream_synchronize(self.device_index, self.stream_id)

    def __eq__(self, other):
        return (isinstance(other, Stream) and self.device_index == other.device_index and
                self.stream_id == other.stream_id)

    def __hash__(self):
        return hash((self.device_index, self.stream_id))

    def __repr__(self):
        return f"<hpu_torch.hpu.Stream device=hpu:{self.device_index} id={self.stream_id}>"


def current_stream(device=None):
    index = _index(device)
    return Stream(index, _id=_C._current_stream(index))


def default_stream(device=None):
    return Stream(device, _id=0)


def set_stream(stream):
    _C._set_stream(stream.device_index, stream.stream_id)


class stream:
    """Context manager: s is its device's current stream (and that device the current one)."""

    def __init__(self, s):
        self.s = s

    def __enter__(self):
        if self.s is None:
            return
        self.prev_device = _C._current_device()
        self.prev = current_stream(self.s.device_index)
        _C._set_device(self.s.device_index)
        set_stream(self.s)

    def __exit__(self, *exc):
        if self.s is None:
            return
        set_stream(self.prev)
        _C._set_device(self.prev_device)


class Event:
    """A point in a stream's work; enable_timing, blocking and interprocess change nothing:
    every event is timed and waited for by the host alike."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self._event = _C._Event()

    def record(self, stream=None):
        stream = current_stream() if stream is None else stream
        self._event.record(stream.device_index, stream.stream_id)

    def wait(self, stream=None):
        stream = current_stream() if stream is None else stream
        self._event.wait(stream.device_index, stream.stream_id)

    def query(self):
        return self._event.query()

    def synchronize(self):
        self._event.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds from this event to end_event, both recorded and completed."""
        return self._event.elapsed_time(end_event._event)

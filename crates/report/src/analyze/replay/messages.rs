//! Point-to-point messages: a send and its receive paired from whichever
//! end comes first, the unmatched end waiting in a queue; Late Sender
//! and Late Receiver once both ends (and a blocking send's end) are read.

use std::collections::VecDeque;

use otf2::CommRef;

use super::{Key, MessagePair, Pass, Pattern, Place, What};
use crate::analyze::stragglers::Link;

pub(super) struct SendSide {
    pub(super) loc: usize,
    /// The send record's time.
    pub(super) time: u64,
    pub(super) enter: u64,
    pub(super) leave: Option<u64>,
    pub(super) node: u32,
    pub(super) blocking: bool,
}

pub(super) struct RecvSide {
    pub(super) loc: usize,
    pub(super) wait_enter: u64,
    pub(super) complete: u64,
    pub(super) post: u64,
    pub(super) node: u32,
    pub(super) test: bool,
    pub(super) bytes: u64,
}

pub(super) struct Msg {
    pub(super) comm: CommRef,
    /// On an MPI communicator other than `MPI_COMM_SELF`: its wait states
    /// are analysed (the others are only paired).
    pub(super) analysed: bool,
    pub(super) send: Option<SendSide>,
    pub(super) recv: Option<RecvSide>,
}

impl Pass<'_> {
    fn new_msg(&mut self, msg: Msg) -> usize {
        match self.free.pop() {
            Some(id) => {
                self.msgs[id] = Some(msg);
                id
            }
            None => {
                self.msgs.push(Some(msg));
                self.msgs.len() - 1
            }
        }
    }

    pub(super) fn free_msg(&mut self, id: usize) {
        self.msgs[id] = None;
        self.free.push(id);
    }

    pub(super) fn send(&mut self, l: usize, t: u64, receiver: u32, comm: CommRef, tag: u32, blocking_record: bool) {
        let analysed = self.mpi_comm(comm);
        let process = self.locs[l].process;
        let Some(me) = self.own_rank(process, comm) else { return };
        let frame = self.mpi_frame(l).filter(|_| analysed);
        let (enter, node, blocking) = match frame {
            Some(i) => {
                let f = &self.locs[l].host.stack[i];
                let name = self.region_name(f.region);
                let blocking = blocking_record && matches!(name, "MPI_Send" | "MPI_Ssend" | "MPI_Bsend" | "MPI_Rsend");
                (f.enter, f.node, blocking)
            }
            None => (t, 0, false),
        };
        let side = SendSide { loc: l, time: t, enter, leave: None, node, blocking };
        let key = (comm, me, receiver, tag);
        let waiting_recv = self
            .queues
            .get(&key)
            .and_then(|q| q.front())
            .is_some_and(|&id| self.msgs[id].as_ref().is_some_and(|m| m.recv.is_some()));
        if waiting_recv {
            let id = self.queues.get_mut(&key).and_then(VecDeque::pop_front).expect("a waiting receive");
            if self.queues.get(&key).is_some_and(VecDeque::is_empty) {
                self.queues.remove(&key);
            }
            if let Some(m) = self.msgs[id].as_mut() {
                m.send = Some(side);
            }
            self.paired(id);
            self.late_sender(id, None);
            if blocking {
                // Late Receiver needs the send call's end.
                if let Some(i) = frame {
                    self.locs[l].host.stack[i].sends.push(id);
                }
            } else {
                self.free_msg(id);
            }
        } else {
            let id = self.new_msg(Msg { comm, analysed, send: Some(side), recv: None });
            self.queues.entry(key).or_default().push_back(id);
            if blocking && let Some(i) = frame {
                self.locs[l].host.stack[i].sends.push(id);
            }
        }
    }

    /// `(tag, bytes)`: the message's.
    pub(super) fn recv(
        &mut self,
        l: usize,
        t: u64,
        sender: u32,
        comm: CommRef,
        (tag, bytes): (u32, u64),
        request: Option<u64>,
    ) {
        let analysed = self.mpi_comm(comm);
        let process = self.locs[l].process;
        let Some(me) = self.own_rank(process, comm) else { return };
        let frame = self.mpi_frame(l).filter(|_| analysed);
        let (wait_enter, node, test) = match frame {
            Some(i) => {
                let f = &self.locs[l].host.stack[i];
                (f.enter, f.node, self.region_name(f.region).starts_with("MPI_Test"))
            }
            None => (t, 0, true),
        };
        let post = request.and_then(|r| self.irecv_posts.remove(&(l, r))).unwrap_or(wait_enter);
        let side = RecvSide { loc: l, wait_enter, complete: t, post, node, test, bytes };
        let key = (comm, sender, me, tag);
        let waiting_send = self
            .queues
            .get(&key)
            .and_then(|q| q.front())
            .is_some_and(|&id| self.msgs[id].as_ref().is_some_and(|m| m.send.is_some()));
        if waiting_send {
            let id = self.queues.get_mut(&key).and_then(VecDeque::pop_front).expect("a waiting send");
            if let Some(m) = self.msgs[id].as_mut() {
                m.recv = Some(side);
            }
            self.paired(id);
            self.late_sender(id, frame);
            self.transfer(id);
            let send = self.msgs[id].as_ref().and_then(|m| m.send.as_ref());
            let done = send.is_none_or(|s| !s.blocking || s.leave.is_some());
            if done {
                self.late_receiver(id);
                self.free_msg(id);
            }
        } else {
            let id = self.new_msg(Msg { comm, analysed, send: None, recv: Some(side) });
            self.queues.entry(key).or_default().push_back(id);
        }
        if self.queues.get(&key).is_some_and(VecDeque::is_empty) {
            self.queues.remove(&key);
        }
    }

    /// A message whose second end was just read: counted, handed out.
    fn paired(&mut self, id: usize) {
        let Some(msg) = self.msgs[id].as_ref() else { return };
        let (Some(send), Some(recv)) = (msg.send.as_ref(), msg.recv.as_ref()) else { return };
        let pair = MessagePair {
            sender: self.locs[send.loc].location,
            sent: send.time,
            receiver: self.locs[recv.loc].location,
            received: recv.complete,
        };
        self.pairs.matched += 1;
        if pair.received < pair.sent {
            self.pairs.received_before_sent += 1;
        }
        self.sink.message(&pair);
    }

    /// A matched message's transfer on the receiving thread: from when
    /// both sides were in their calls until the receive completed (the
    /// stragglers' links). Not for a completion found by a test call.
    fn transfer(&mut self, id: usize) {
        let Some(msg) = self.msgs[id].as_ref() else { return };
        let (Some(send), Some(recv)) = (msg.send.as_ref(), msg.recv.as_ref()) else { return };
        if recv.test || !msg.analysed {
            return;
        }
        let ticks = recv.complete.saturating_sub(send.enter.max(recv.wait_enter));
        let link = Link::From(self.locs[send.loc].process);
        let (l, bytes) = (recv.loc, recv.bytes);
        self.locs[l].host.transfers.add(link, ticks, bytes);
    }

    /// Late Sender of a matched message: the receive waited from its
    /// (wait) call's enter until the send's enter. `frame`: the receiving
    /// call, still open, whose earlier messages' waiting is not counted
    /// twice (a wait for several messages counts the latest sender).
    fn late_sender(&mut self, id: usize, frame: Option<usize>) {
        let Some(msg) = self.msgs[id].as_ref() else { return };
        let (Some(send), Some(recv)) = (msg.send.as_ref(), msg.recv.as_ref()) else { return };
        if recv.test || !msg.analysed {
            return;
        }
        let (l, comm) = (recv.loc, msg.comm);
        let upper = send.enter.min(recv.complete);
        let mut base = recv.wait_enter;
        if let Some(i) = frame {
            let f = &mut self.locs[l].host.stack[i];
            base = base.max(f.ls_until);
            f.ls_until = f.ls_until.max(upper);
        }
        if upper <= base {
            return;
        }
        let partner = self.rank_of_loc(send.loc);
        let culprit = send.loc;
        let key =
            Key { pattern: Pattern::LateSender, place: Place::Loc(l), what: What::Path(recv.node), comm: Some(comm) };
        let process = self.locs[l].process;
        self.record(key, base, upper, upper - base, partner, process);
        self.timelines.wait(l, upper, culprit);
    }

    /// Late Receiver of a matched message whose blocking send has ended:
    /// the send waited from its enter until the receive was posted, if the
    /// send was still in progress then.
    pub(super) fn late_receiver(&mut self, id: usize) {
        let Some(msg) = self.msgs[id].as_ref() else { return };
        let (Some(send), Some(recv)) = (msg.send.as_ref(), msg.recv.as_ref()) else { return };
        let Some(leave) = send.leave else { return };
        if !msg.analysed || !send.blocking || leave < recv.post || recv.post <= send.enter {
            return;
        }
        let (l, comm, node, enter, post) = (send.loc, msg.comm, send.node, send.enter, recv.post);
        let partner = self.rank_of_loc(recv.loc);
        let culprit = recv.loc;
        let key =
            Key { pattern: Pattern::LateReceiver, place: Place::Loc(l), what: What::Path(node), comm: Some(comm) };
        let process = self.locs[l].process;
        self.record(key, enter, post, post - enter, partner, process);
        self.timelines.wait(l, post, culprit);
    }
}

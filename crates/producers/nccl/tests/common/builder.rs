//! Capture sequences built by hand for the replay tests: a builder of
//! records on a clock of its own, and the launches and calls they hold.

use gputrace_nccl::capture::{Capture, Record};
use gputrace_nccl::levels::Levels;
use gputrace_nccl::model::{
    ApiCall, CollLaunch, Descr, Func, InitArgs, NvtxPayload, NvtxRange, P2pLaunch, Start, StateChange, Sym,
};
use raw::{Producer, StreamHeader};

pub struct Builder {
    pub c: Capture,
    t: u64,
}

pub const PID: u32 = 500;
pub const MAIN: u32 = 500;
pub const PROXY: u32 = 501;

impl Builder {
    pub fn new(levels: Levels) -> Builder {
        let header = StreamHeader {
            producer: Producer::Nccl,
            host: "testhost".into(),
            pid: PID,
            process_start: 1,
            clock_domain: 2,
            monotonic_ns: 1_000,
            realtime_ns: 2_000,
            rank_hint: None,
            command: vec![],
        };
        let mut c = Capture { levels, header, records: Vec::new() };
        c.records.push(Record::Thread { tid: MAIN, name: "main".into() });
        c.records.push(Record::Thread { tid: PROXY, name: "proxy".into() });
        Builder { c, t: 10_000 }
    }

    pub fn tick(&mut self, dt: u64) -> u64 {
        self.t += dt;
        self.t
    }

    pub fn init(&mut self, ctx: u64, args: InitArgs) -> &mut Self {
        let t = self.tick(10);
        self.c.records.push(Record::Init { t, tid: MAIN, ctx, args });
        self
    }

    #[allow(clippy::too_many_arguments)]
    pub fn start(&mut self, tid: u32, ctx: u64, h: u64, parent: u64, rank: i32, descr: Descr) -> &mut Self {
        let t = self.tick(100);
        self.c.records.push(Record::Start {
            t,
            tid,
            ctx,
            handle: h,
            start: Start { descr, parent: parent as usize, rank },
        });
        self
    }

    pub fn state(&mut self, tid: u32, h: u64, state: StateChange) -> &mut Self {
        let t = self.tick(100);
        self.c.records.push(Record::State { t, tid, handle: h, state });
        self
    }

    pub fn stop(&mut self, tid: u32, h: u64) -> &mut Self {
        let t = self.tick(100);
        self.c.records.push(Record::Stop { t, tid, handle: h });
        self
    }

    pub fn nvtx_push(&mut self, name: &str, payload: Option<NvtxPayload>) -> &mut Self {
        let t = self.tick(100);
        self.c.records.push(Record::NvtxPush { t, tid: MAIN, range: NvtxRange { name: Sym::intern(name), payload } });
        self
    }

    pub fn nvtx_pop(&mut self) -> &mut Self {
        let t = self.tick(100);
        self.c.records.push(Record::NvtxPop { t, tid: MAIN, payload: None });
        self
    }

    pub fn finalize(&mut self, ctx: u64) -> &mut Self {
        let t = self.tick(100);
        self.c.records.push(Record::Finalize { t, tid: MAIN, ctx });
        self
    }
}

pub fn v5_init(rank: i32) -> InitArgs {
    InitArgs {
        version: 5,
        comm_id: Some(0xc0ffee),
        name: Some("world".into()),
        n_nodes: Some(1),
        nranks: Some(4),
        rank: Some(rank),
    }
}

pub fn coll(func: Func, count: u64, datatype: &str, root: i32) -> CollLaunch {
    CollLaunch {
        seq: 7,
        func,
        count,
        root,
        datatype: Sym::intern(datatype),
        reduction: None,
        channels: 4,
        warps: 8,
        algo: Sym::intern("TREE"),
        proto: Sym::intern("LL128"),
        comm: None,
    }
}

pub fn api(func: Func, count: u64, root: i32, graph: bool) -> ApiCall {
    ApiCall { func, count, datatype: Sym::intern("ncclFloat16"), root, graph_captured: graph }
}

pub fn p2p(func: Func, count: u64, peer: i32) -> P2pLaunch {
    P2pLaunch { func, count, datatype: Sym::intern("ncclInt64"), peer, channels: 2, comm: None }
}

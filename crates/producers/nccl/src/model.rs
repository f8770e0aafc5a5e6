//! The plugin's own, version-independent picture of what NCCL reports.
//!
//! Every version of the profiler interface (v1 to v6) describes its events
//! with a different C layout; [`crate::exports`] converts each of them into
//! the types here, and everything after that — recording, capture, replay —
//! exists once. Strings NCCL passes (function, data type, algorithm and
//! protocol names) become [`Sym`]s: the names NCCL is known to use have
//! fixed numbers, so converting them takes no lock; other names are
//! interned once per process.

use std::sync::Mutex;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A name NCCL passed: an index into the process's table of names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

/// The names with fixed numbers: data types first (their sizes are in
/// [`DATATYPE_SIZES`]), then algorithms, protocols and reductions.
const KNOWN: &[&str] = &[
    "",
    // NCCL (2.24 to 2.30 at least) names ncclUint8 "Unknown": its
    // ncclDatatypeToString has no case for it.
    "Unknown",
    "ncclInt8",
    "ncclUint8",
    "ncclInt32",
    "ncclUint32",
    "ncclInt64",
    "ncclUint64",
    "ncclFloat16",
    "ncclFloat32",
    "ncclFloat64",
    "ncclBfloat16",
    "ncclFloat8e4m3",
    "ncclFloat8e5m2",
    "TREE",
    "RING",
    "COLLNET_DIRECT",
    "COLLNET_CHAIN",
    "NVLS",
    "NVLS_TREE",
    "PAT",
    "LL",
    "LL128",
    "SIMPLE",
    "Sum",
    "Prod",
    "Max",
    "Min",
    "Avg",
    "PreMulSum",
];

/// Bytes per element of the data types at the start of [`KNOWN`].
const DATATYPE_SIZES: &[u64] = &[0, 1, 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1];

/// The data types of NCCL's `ncclDataType_t`, in its numbering (v1 passes
/// the number).
const DATATYPE_BY_ID: &[&str] = &[
    "ncclInt8",
    "ncclUint8",
    "ncclInt32",
    "ncclUint32",
    "ncclInt64",
    "ncclUint64",
    "ncclFloat16",
    "ncclFloat32",
    "ncclFloat64",
    "ncclBfloat16",
    "ncclFloat8e4m3",
    "ncclFloat8e5m2",
];

/// NCCL's `NCCL_ALGO_*` numbering (v1).
const ALGO_BY_ID: &[&str] = &["TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"];
/// NCCL's `NCCL_PROTO_*` numbering (v1).
const PROTO_BY_ID: &[&str] = &["LL", "LL128", "SIMPLE"];
/// NCCL's `ncclRedOp_t` numbering (v1); larger numbers are user-defined.
const REDOP_BY_ID: &[&str] = &["Sum", "Prod", "Max", "Min", "Avg"];

static DYNAMIC: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

impl Sym {
    pub const EMPTY: Sym = Sym(0);

    /// The number of `name`, interning it if it is new.
    pub fn intern(name: &str) -> Sym {
        if let Some(i) = KNOWN.iter().position(|k| *k == name) {
            return Sym(i as u32);
        }
        let mut dynamic = DYNAMIC.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = dynamic.iter().position(|k| *k == name) {
            return Sym((KNOWN.len() + i) as u32);
        }
        // Names are few (NCCL's enumerations) and live as long as the
        // process: leaking them gives `&'static str` without a lock to read.
        let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
        dynamic.push(leaked);
        Sym((KNOWN.len() + dynamic.len() - 1) as u32)
    }

    /// Like [`intern`](Self::intern) for bytes from C (lossy UTF-8).
    pub fn from_bytes(bytes: &[u8]) -> Sym {
        if let Some(i) = KNOWN.iter().position(|k| k.as_bytes() == bytes) {
            return Sym(i as u32);
        }
        Sym::intern(&String::from_utf8_lossy(bytes))
    }

    pub fn as_str(self) -> &'static str {
        let i = self.0 as usize;
        if let Some(k) = KNOWN.get(i) {
            return k;
        }
        let dynamic = DYNAMIC.lock().unwrap_or_else(|e| e.into_inner());
        dynamic.get(i - KNOWN.len()).copied().unwrap_or("")
    }

    /// Whether this is one of the names with a fixed number.
    pub fn is_known(self) -> bool {
        (self.0 as usize) < KNOWN.len()
    }

    /// Bytes per element when this names a data type; 0 when unknown.
    pub fn datatype_size(self) -> u64 {
        DATATYPE_SIZES.get(self.0 as usize).copied().unwrap_or(0)
    }

    /// The number of known names: [`Sym`]s below it need no lock.
    pub const fn known_count() -> usize {
        KNOWN.len()
    }

    /// A data type by its `ncclDataType_t` number (v1).
    pub fn datatype_by_id(id: u8) -> Sym {
        DATATYPE_BY_ID.get(id as usize).map_or_else(|| Sym::intern(&format!("datatype {id}")), |n| Sym::intern(n))
    }

    /// An algorithm by its `NCCL_ALGO_*` number (v1).
    pub fn algo_by_id(id: u8) -> Sym {
        ALGO_BY_ID.get(id as usize).map_or(Sym::intern("Unknown"), |n| Sym::intern(n))
    }

    /// A protocol by its `NCCL_PROTO_*` number (v1).
    pub fn proto_by_id(id: u8) -> Sym {
        PROTO_BY_ID.get(id as usize).map_or(Sym::intern("Unknown"), |n| Sym::intern(n))
    }

    /// A reduction by its `ncclRedOp_t` number (v1).
    pub fn redop_by_id(id: u32) -> Sym {
        REDOP_BY_ID.get(id as usize).map_or(Sym::intern("PreMulSum"), |n| Sym::intern(n))
    }
}

/// A name is written as its text: numbers of names other than the known
/// ones differ from process to process.
impl Serialize for Sym {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Sym {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Sym, D::Error> {
        Ok(Sym::intern(&String::deserialize(d)?))
    }
}

/// What a collective or point-to-point operation is, from NCCL's function
/// name ("AllReduce", "Send", ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Func {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    AlltoAll,
    Gather,
    Scatter,
    Send,
    Recv,
    SendRecv,
    Other(Sym),
}

impl Func {
    /// Every function with a name of its own, for tables indexed by
    /// [`index`](Self::index).
    pub const NAMED: [Func; 11] = [
        Func::AllReduce,
        Func::AllGather,
        Func::ReduceScatter,
        Func::Broadcast,
        Func::Reduce,
        Func::AlltoAll,
        Func::Gather,
        Func::Scatter,
        Func::Send,
        Func::Recv,
        Func::SendRecv,
    ];

    /// NCCL's name, as `ncclFuncToString` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Func::AllReduce => "AllReduce",
            Func::AllGather => "AllGather",
            Func::ReduceScatter => "ReduceScatter",
            Func::Broadcast => "Broadcast",
            Func::Reduce => "Reduce",
            Func::AlltoAll => "AlltoAll",
            Func::Gather => "Gather",
            Func::Scatter => "Scatter",
            Func::Send => "Send",
            Func::Recv => "Recv",
            Func::SendRecv => "SendRecv",
            Func::Other(s) => s.as_str(),
        }
    }

    pub fn from_bytes(name: &[u8]) -> Func {
        Func::NAMED
            .into_iter()
            .find(|f| f.name().as_bytes() == name)
            .unwrap_or_else(|| Func::Other(Sym::from_bytes(name)))
    }

    pub fn from_name(name: &str) -> Func {
        Func::from_bytes(name.as_bytes())
    }

    /// NCCL's `ncclFunc_t` numbering of 2.23 (v1 passes the number).
    pub fn by_id(id: u8) -> Func {
        match id {
            0 => Func::Broadcast,
            1 => Func::Reduce,
            2 => Func::AllGather,
            3 => Func::ReduceScatter,
            4 => Func::AllReduce,
            5 => Func::SendRecv,
            6 => Func::Send,
            7 => Func::Recv,
            _ => Func::Other(Sym::intern(&format!("func {id}"))),
        }
    }

    /// Position in [`NAMED`](Self::NAMED); `None` for other names.
    pub fn index(self) -> Option<usize> {
        Func::NAMED.iter().position(|f| *f == self)
    }

    /// The NCCL API function: "ncclAllReduce", "ncclSend", ...
    pub fn api_name(self) -> String {
        format!("nccl{}", self.name())
    }
}

/// A function is written as NCCL's name for it.
impl Serialize for Func {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Func {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Func, D::Error> {
        Ok(Func::from_name(&String::deserialize(d)?))
    }
}

/// A data type: its name and, through [`Sym::datatype_size`], its size.
pub type DataType = Sym;

/// A user's call of a collective or of send/receive (v5+ API events).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiCall {
    pub func: Func,
    pub count: u64,
    pub datatype: DataType,
    /// Meaningful for rooted collectives only; 0 for send/receive.
    pub root: i32,
    /// The call was captured into a CUDA graph: nothing moves now; the
    /// graph's launches are reported by collective events later.
    pub graph_captured: bool,
}

/// Where NCCL's older interfaces (v1 to v3) name the communicator in each
/// collective and point-to-point descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommTag {
    pub hash: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Sym>,
}

/// A collective as NCCL launches it (the "Coll" event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollLaunch {
    pub seq: u64,
    pub func: Func,
    /// Elements; NCCL counts all-gather and broadcast here in bytes (with
    /// data type int8).
    pub count: u64,
    pub root: i32,
    pub datatype: DataType,
    /// v1 only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduction: Option<Sym>,
    pub channels: u8,
    pub warps: u8,
    pub algo: Sym,
    pub proto: Sym,
    /// v1 to v3 only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comm: Option<CommTag>,
}

/// A send or receive as NCCL launches it (the "P2p" event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct P2pLaunch {
    pub func: Func,
    pub count: u64,
    pub datatype: DataType,
    pub peer: i32,
    /// v4 and later; 0 before.
    pub channels: u8,
    /// v1 to v3 only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comm: Option<CommTag>,
}

/// A proxy thread's network operation for one channel and peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyOp {
    pub pid: i32,
    pub channel: u8,
    pub peer: i32,
    pub steps: i32,
    pub chunk_size: i32,
    pub is_send: bool,
}

/// What an event is, with what its descriptor said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", deny_unknown_fields)]
pub enum Descr {
    /// A kernel plan's launch (`ncclProfileGroup`).
    Group,
    /// The user's group, explicit or implicit (`ncclProfileGroupApi`, v5+).
    GroupApi {
        depth: i32,
        graph_captured: bool,
    },
    CollApi(ApiCall),
    P2pApi(ApiCall),
    KernelLaunch,
    Coll(CollLaunch),
    P2p(P2pLaunch),
    ProxyOp(ProxyOp),
    ProxyStep {
        step: i32,
    },
    ProxyCtrl,
    /// One channel of a kernel; `gpu_start` is the GPU's %globaltimer (v4+).
    KernelCh {
        channel: u8,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gpu_start: Option<u64>,
    },
    /// An event type the plugin does not record (network plugin, copy
    /// engine collectives, or one unknown to it).
    Unsupported {
        type_bits: u64,
    },
}

/// What NCCL's NVTX payload says about a call (NCCL's payload schemas in
/// `src/include/nvtx_payload_schemas.h`): the communicator's hash (the
/// `commId` of `init`), the bytes of one block (count × type size), and
/// the root or peer where the call has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvtxPayload {
    pub comm: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The root (rooted collectives) or the peer (send, receive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_or_peer: Option<i32>,
}

/// One of NCCL's own NVTX push/pop ranges (domain "NCCL"), which
/// gputrace's NVTX library hands to the plugin: NCCL opens one around
/// every API function it annotates ("ncclAllReduce", "ncclGroupStart",
/// "ncclCommInitRank", ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvtxRange {
    pub name: Sym,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<NvtxPayload>,
}

/// NCCL's static payload schema ids: `NVTX_PAYLOAD_ENTRY_TYPE_SCHEMA_ID_STATIC_START`
/// (1 << 24) plus NCCL's `NVTX_SID_*` number.
pub mod nvtx_schema {
    pub const STATIC_START: u64 = 1 << 24;
    pub const ALL_GATHER: u64 = 4;
    pub const ALL_REDUCE: u64 = 5;
    pub const BROADCAST: u64 = 6;
    pub const REDUCE_SCATTER: u64 = 7;
    pub const REDUCE: u64 = 8;
    pub const SEND: u64 = 9;
    pub const RECV: u64 = 10;
    pub const ALL_TO_ALL: u64 = 16;
    pub const GATHER: u64 = 17;
    pub const SCATTER: u64 = 18;
}

impl NvtxPayload {
    /// Reads NCCL's payload of schema `schema_id` (its bytes `data`):
    /// the collective and send/receive schemas begin with the
    /// communicator's hash (u64) and the bytes (size_t), followed by an
    /// int root or peer in the rooted and point-to-point ones; the others
    /// begin with a communicator hash. `None` for a schema that is not
    /// NCCL's.
    pub fn decode(schema_id: u64, data: &[u8]) -> Option<NvtxPayload> {
        use nvtx_schema::*;
        let sid = schema_id.checked_sub(STATIC_START)?;
        let u64_at = |o: usize| data.get(o..o + 8).map(|b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])));
        let i32_at = |o: usize| data.get(o..o + 4).map(|b| i32::from_ne_bytes(b.try_into().unwrap_or([0; 4])));
        let comm = u64_at(0)?;
        let (bytes, root_or_peer) = match sid {
            ALL_GATHER | ALL_REDUCE | REDUCE_SCATTER | ALL_TO_ALL => (u64_at(8), None),
            BROADCAST | REDUCE | SEND | RECV | GATHER | SCATTER => (u64_at(8), i32_at(16)),
            0..=18 => (None, None),
            _ => return None,
        };
        Some(NvtxPayload { comm, bytes, root_or_peer })
    }
}

/// A `startEvent`: the descriptor, its parent object (an address, used
/// only as a key) and the rank NCCL gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Start {
    pub descr: Descr,
    pub parent: usize,
    pub rank: i32,
}

/// A `recordEventState`: NCCL's state number and whichever arguments the
/// state carries in the version at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateChange {
    pub code: u32,
    /// Bytes of a proxy step (v4+) or of a proxy operation so far (v1–v3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trans_size: Option<u64>,
    /// Steps of a proxy operation so far (v1–v3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<i32>,
    /// Proxy operations appended (proxy control).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appended: Option<i32>,
    /// GPU %globaltimer at a kernel channel's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_timer: Option<u64>,
}

/// NCCL's state numbers (`ncclProfilerEventState_t`), the same in every
/// version that has them.
pub mod state {
    pub const PROXY_OP_FIRST: u32 = 0;
    pub const PROXY_OP_LAST: u32 = 7;
    pub const PROXY_STEP_FIRST: u32 = 8;
    pub const PROXY_STEP_LAST: u32 = 12;
    pub const PROXY_CTRL_IDLE: u32 = 13;
    pub const PROXY_CTRL_ACTIVE: u32 = 14;
    pub const PROXY_CTRL_SLEEP: u32 = 15;
    pub const PROXY_CTRL_WAKEUP: u32 = 16;
    pub const PROXY_CTRL_APPEND: u32 = 17;
    pub const PROXY_CTRL_APPEND_END: u32 = 18;
    pub const PROXY_OP_IN_PROGRESS_V4: u32 = 19;
    pub const PROXY_STEP_SEND_PEER_WAIT_V4: u32 = 20;
    pub const NET_PLUGIN_UPDATE: u32 = 21;
    pub const KERNEL_CH_STOP: u32 = 22;
    pub const GROUP_START_API_STOP: u32 = 23;
    pub const GROUP_END_API_START: u32 = 24;

    pub fn is_proxy_step(code: u32) -> bool {
        (PROXY_STEP_FIRST..=PROXY_STEP_LAST).contains(&code) || code == PROXY_STEP_SEND_PEER_WAIT_V4
    }

    pub fn is_proxy_op(code: u32) -> bool {
        (PROXY_OP_FIRST..=PROXY_OP_LAST).contains(&code) || code == PROXY_OP_IN_PROGRESS_V4
    }
}

/// A communicator as `init` describes it. What a version does not give is
/// `None`: v1–v3 give nothing at all (their descriptors name the
/// communicator instead, see [`CommTag`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitArgs {
    pub version: u32,
    /// `commId` (v5+) or `commHash` (v4): the same on every rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comm_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_nodes: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nranks: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<i32>,
}

/// A stable 64-bit hash (FNV-1a) of a name, for communicators NCCL gives
/// no hash for.
pub fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_have_fixed_numbers_and_sizes() {
        assert_eq!(Sym::intern("ncclFloat32").datatype_size(), 4);
        assert_eq!(Sym::intern("ncclBfloat16").datatype_size(), 2);
        assert_eq!(Sym::intern("Unknown").datatype_size(), 1);
        assert_eq!(Sym::intern("RING").datatype_size(), 0);
        assert!(Sym::intern("SIMPLE").is_known());
        let odd = Sym::intern("someNewType");
        assert!(!odd.is_known());
        assert_eq!(odd.as_str(), "someNewType");
        assert_eq!(Sym::intern("someNewType"), odd);
        assert_eq!(odd.datatype_size(), 0);
    }

    #[test]
    fn functions_round_trip_by_name_and_number() {
        for f in Func::NAMED {
            assert_eq!(Func::from_name(f.name()), f);
        }
        assert_eq!(Func::by_id(4), Func::AllReduce);
        assert_eq!(Func::by_id(0), Func::Broadcast);
        assert_eq!(Func::AllReduce.api_name(), "ncclAllReduce");
        assert!(matches!(Func::from_name("Frobnicate"), Func::Other(s) if s.as_str() == "Frobnicate"));
        assert_eq!(Sym::datatype_by_id(7).as_str(), "ncclFloat32");
        assert_eq!(Sym::algo_by_id(1).as_str(), "RING");
        assert_eq!(Sym::proto_by_id(2).as_str(), "SIMPLE");
        assert_eq!(Sym::redop_by_id(0).as_str(), "Sum");
    }
}

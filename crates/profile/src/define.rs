//! What the profile learns before the first event: its metrics, the
//! program's root call path, the archive's regions and system tree.

use std::collections::HashMap;
use std::path::Path;

use cube::{GroupType, LocationType, Metric, Region};
use merge::Defined;
use otf2::LocationGroupType;
use raw::{Paradigm, RegionRole};

use crate::call_tree::{Acc, Kind, Node, PROGRAM, ROOT};
use crate::{METRICS, Profile};

impl Profile {
    /// The metrics, the program's root and the archive's system tree.
    pub(crate) fn define(&mut self, d: &Defined<'_>) -> cube::Result<()> {
        // The root: the program, as rank 0 (or the first process) ran it.
        let main = d.processes.iter().find(|p| p.mpi.is_some_and(|(r, _)| r == 0)).or(d.processes.first());
        let command = main.map(|p| p.command.as_slice()).unwrap_or_default();
        // A process group's rank is its process's.
        let ranks: HashMap<u32, i64> = d
            .processes
            .iter()
            .zip(&d.layout.processes)
            .filter_map(|(p, plan)| Some((plan.group?.id(), i64::from(p.rank))))
            .collect();
        let mut regions = d.layout.regions.clone();
        self.sampled_base = regions.len();
        self.functions = function_regions(&regions, &d.layout.sampled.functions);
        regions.extend(d.layout.sampled.functions.iter().cloned());
        self.sampled = std::sync::Arc::new(d.layout.sampled.clone());
        self.setup(command, regions, &d.defs.system_tree(), &ranks)
    }

    /// [`define`](Self::define) from its parts: the program's command
    /// line, the regions by summary index, the system tree and the rank of
    /// each process group (by group id).
    pub(crate) fn setup(
        &mut self,
        command: &[String],
        regions: Vec<merge::inputs::RegionDef>,
        tree: &otf2::SystemTree,
        ranks: &HashMap<u32, i64>,
    ) -> cube::Result<()> {
        let c = &mut self.cube;
        c.attribute("Creator", concat!("gputrace ", env!("CARGO_PKG_VERSION")));
        c.attribute("CUBE_CT_AGGR", "SUM");
        for &(unique, display, ty, kind, unit, description) in METRICS {
            let id = c.metric(Metric::new(unique, display, ty, kind, unit).description(description), None)?;
            self.metrics.push(id);
        }
        self.cube_regions = vec![None; regions.len()];
        self.regions = regions;

        let program = command
            .first()
            .map(|a| Path::new(a).file_name().map_or(a.clone(), |n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "program".to_string());
        let full = command.join(" ");
        let mut root = Region::new(&program, "measurement", "artificial");
        root.mangled_name = &full;
        root.module = command.first().map_or("", |a| a.as_str());
        let root = c.region(root);
        self.root = Some(c.cnode(root, None)?);
        self.nodes.push(Node { parent: ROOT, region: PROGRAM, kind: Kind::Call, acc: Acc::default() });

        let mut nodes = Vec::with_capacity(tree.nodes.len());
        for n in &tree.nodes {
            let parent = n.parent.map(|p| nodes[p.id() as usize]);
            nodes.push(c.system_tree_node(&n.name, &n.class, parent)?);
        }
        let mut groups = Vec::with_capacity(tree.groups.len());
        let mut members = vec![0i64; tree.groups.len()];
        for (i, g) in tree.groups.iter().enumerate() {
            // A context's rank is its creator's.
            let rank =
                ranks.get(&(i as u32)).or_else(|| g.creating.and_then(|k| ranks.get(&k.id()))).copied().unwrap_or(0);
            let ty = match g.ty {
                LocationGroupType::Accelerator => GroupType::Accelerator,
                _ => GroupType::Process,
            };
            groups.push(c.location_group(&g.name, rank, ty, nodes[g.parent.id() as usize])?);
        }
        for l in &tree.locations {
            let ty = match l.ty {
                otf2::LocationType::AcceleratorStream => LocationType::AcceleratorStream,
                otf2::LocationType::Metric => LocationType::Metric,
                _ => LocationType::Thread,
            };
            let g = l.group.id() as usize;
            let id = c.location(&l.name, members[g], ty, groups[g])?;
            members[g] += 1;
            self.locations.insert(l.location.id(), id);
        }
        // Room made before the merge's buffers are: see [`Profile`].
        self.nodes.reserve(256);
        self.children.reserve(256);
        self.results.reserve(32 * tree.locations.len());
        Ok(())
    }
}

/// A region of the archive as a cube region: Score-P's paradigm and role
/// names, the group (an MPI function's) as its description.
pub(crate) fn cube_region(d: &merge::inputs::RegionDef) -> Region<'_> {
    // As in the archive (`Paradigm::shown_as`).
    let paradigm = match d.paradigm.shown_as() {
        Paradigm::Mpi => "mpi",
        Paradigm::Cuda => "cuda",
        Paradigm::Measurement => "measurement",
        _ => "user",
    };
    let role = match d.role {
        RegionRole::Unknown => "unknown",
        RegionRole::Function => "function",
        RegionRole::Wrapper => "wrapper",
        RegionRole::Code => "code",
        RegionRole::Barrier => "barrier",
        RegionRole::ImplicitBarrier => "implicit barrier",
        RegionRole::CollOne2All => "one2all",
        RegionRole::CollAll2One => "all2one",
        RegionRole::CollAll2All => "all2all",
        RegionRole::CollOther => "other collective",
        RegionRole::FileIo => "file io",
        RegionRole::Point2Point => "point2point",
        RegionRole::Rma => "rma",
        RegionRole::DataTransfer => "data transfer",
        RegionRole::Artificial => "artificial",
        RegionRole::Allocate => "allocate",
        RegionRole::Deallocate => "deallocate",
    };
    let mut r = Region::new(&d.name, paradigm, role);
    r.mangled_name = &d.canonical;
    r.description = &d.group;
    r
}

/// The call-tree region of each sampled function: the traced region of
/// the same name where there is one (an MPI, CUDA or NCCL function: a
/// sample in gputrace's wrapper of `MPI_Barrier`, or in the runtime's
/// `cudaMemcpy`, is in that call's call path, not in a function beside
/// it), else the function's own (after the traced regions).
pub(crate) fn function_regions(
    traced: &[merge::inputs::RegionDef],
    functions: &[merge::inputs::RegionDef],
) -> Vec<u32> {
    use raw::Paradigm::{Cuda, Mpi, Nccl};
    let calls: HashMap<&str, usize> = traced
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.paradigm, Mpi | Cuda | Nccl))
        .map(|(i, r)| (r.name.as_str(), i))
        .collect();
    functions
        .iter()
        .enumerate()
        .map(|(f, d)| calls.get(d.name.as_str()).copied().unwrap_or(traced.len() + f) as u32)
        .collect()
}

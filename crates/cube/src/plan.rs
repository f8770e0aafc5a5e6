//! The ids and orders of a written cube: each tree's children and roots,
//! the metrics depth first, the call tree's two enumerations (depth first,
//! and CubeLib's "wide" one for inclusive metrics), and the locations'
//! columns in the system tree's order.

use crate::Cube;

/// The ids and orders a written cube uses.
pub(crate) struct Plan {
    /// Metrics depth first; their written ids by definition index.
    pub(crate) metric_order: Vec<u32>,
    pub(crate) metric_id: Vec<u32>,
    /// Children of each metric, call-tree node and system-tree node.
    pub(crate) metric_children: Vec<Vec<u32>>,
    pub(crate) cnode_children: Vec<Vec<u32>>,
    pub(crate) cnode_roots: Vec<u32>,
    pub(crate) node_children: Vec<Vec<u32>>,
    pub(crate) node_roots: Vec<u32>,
    /// Per system-tree node its groups; per group its locations.
    pub(crate) node_groups: Vec<Vec<u32>>,
    pub(crate) group_locations: Vec<Vec<u32>>,
    /// A call-tree node's place in the depth-first enumeration (also its
    /// written id) and in the wide one.
    pub(crate) deep_position: Vec<u32>,
    pub(crate) wide_position: Vec<u32>,
    /// A location's column in the data rows (also its written id).
    pub(crate) location_column: Vec<u32>,
}

impl Plan {
    pub(crate) fn of(c: &Cube) -> Plan {
        let (metric_children, metric_roots) = tree(c.metrics.iter().map(|m| m.parent.map(|p| p.index())));
        let metric_order = depth_first(&metric_roots, &metric_children);
        let mut metric_id = vec![0; c.metrics.len()];
        for (k, &m) in metric_order.iter().enumerate() {
            metric_id[m as usize] = k as u32;
        }

        let (cnode_children, cnode_roots) = tree(c.cnodes.iter().map(|n| n.parent.map(|p| p.index())));
        let mut deep_position = vec![0; c.cnodes.len()];
        for (k, &n) in depth_first(&cnode_roots, &cnode_children).iter().enumerate() {
            deep_position[n as usize] = k as u32;
        }
        let mut wide_position = vec![0; c.cnodes.len()];
        for (k, &n) in wide(&cnode_roots, &cnode_children).iter().enumerate() {
            wide_position[n as usize] = k as u32;
        }

        let (node_children, node_roots) = tree(c.nodes.iter().map(|n| n.parent.map(|p| p.index())));
        let mut node_groups = vec![Vec::new(); c.nodes.len()];
        for (i, g) in c.groups.iter().enumerate() {
            node_groups[g.node.index()].push(i as u32);
        }
        let mut group_locations = vec![Vec::new(); c.groups.len()];
        for (i, l) in c.locations.iter().enumerate() {
            group_locations[l.group.index()].push(i as u32);
        }
        // Locations in the order the system tree lists them: a node's
        // groups (and their locations) before its child nodes, as the
        // format requires them written.
        let mut location_column = vec![0; c.locations.len()];
        let mut column = 0u32;
        for n in depth_first(&node_roots, &node_children) {
            for &g in &node_groups[n as usize] {
                for &l in &group_locations[g as usize] {
                    location_column[l as usize] = column;
                    column += 1;
                }
            }
        }
        Plan {
            metric_order,
            metric_id,
            metric_children,
            cnode_children,
            cnode_roots,
            node_children,
            node_roots,
            node_groups,
            group_locations,
            deep_position,
            wide_position,
            location_column,
        }
    }
}

/// A tree from each element's parent (index): every element's children
/// and the roots, in definition order.
fn tree(parents: impl ExactSizeIterator<Item = Option<usize>>) -> (Vec<Vec<u32>>, Vec<u32>) {
    let mut children = vec![Vec::new(); parents.len()];
    let mut roots = Vec::new();
    for (i, parent) in parents.enumerate() {
        match parent {
            Some(p) => children[p].push(i as u32),
            None => roots.push(i as u32),
        }
    }
    (children, roots)
}

/// The nodes of a forest depth first, each before its children.
pub(crate) fn depth_first(roots: &[u32], children: &[Vec<u32>]) -> Vec<u32> {
    let mut out = Vec::with_capacity(children.len());
    let mut stack: Vec<u32> = roots.iter().rev().copied().collect();
    while let Some(n) = stack.pop() {
        out.push(n);
        stack.extend(children[n as usize].iter().rev());
    }
    out
}

/// CubeLib's enumeration for inclusive metrics: each root, then, depth
/// first, at every node all of its children together.
pub(crate) fn wide(roots: &[u32], children: &[Vec<u32>]) -> Vec<u32> {
    let mut out = Vec::with_capacity(children.len());
    for &root in roots {
        out.push(root);
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            out.extend_from_slice(&children[n as usize]);
            stack.extend(children[n as usize].iter().rev());
        }
    }
    out
}

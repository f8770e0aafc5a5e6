//! `anchor.xml`: the definitions, in the element order CubeLib's parser
//! expects (attributes, metrics, program, system; in the program the
//! regions before the call tree; in a system-tree node its name, class
//! and attributes, then its location groups, then its child nodes).

use std::fmt::Write;

use crate::plan::Plan;
use crate::{Cube, GroupType, LocationType};

/// The anchor of `c`.
pub fn anchor(c: &Cube, plan: &Plan) -> String {
    let mut s = String::with_capacity(4096 + 256 * (c.regions.len() + c.cnodes.len() + c.locations.len()));
    // Accelerator groups and streams are Cube 4.7's; without them the
    // file is readable by Cube 4.4 and later.
    let gpu = c.groups.iter().any(|g| g.ty == GroupType::Accelerator)
        || c.locations.iter().any(|l| l.ty == LocationType::AcceleratorStream);
    let version = if gpu { "4.7" } else { "4.4" };
    let _ = writeln!(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\n<cube version=\"{version}\">");
    for (k, v) in &c.attributes {
        attr(&mut s, k, v);
    }
    s.push_str("<metrics>\n");
    for &m in &plan.metric_roots() {
        metric(&mut s, c, plan, m);
    }
    s.push_str("</metrics>\n<program>\n");
    for (id, r) in c.regions.iter().enumerate() {
        // A region without a file is in its paradigm's module, as Score-P
        // names its adapters' ("MPI"): CubeLib's `cube_sanity` wants a
        // file name for every region.
        let module = if r.module.is_empty() { r.paradigm.to_uppercase() } else { r.module.clone() };
        let _ = writeln!(
            s,
            "<region id=\"{id}\" mod=\"{}\" begin=\"{}\" end=\"{}\">",
            escape(&module),
            r.begin_line,
            r.end_line
        );
        element(&mut s, "name", &r.name);
        element(&mut s, "mangled_name", &r.mangled_name);
        element(&mut s, "paradigm", &r.paradigm);
        element(&mut s, "role", &r.role);
        element(&mut s, "url", "");
        element(&mut s, "descr", &r.description);
        s.push_str("</region>\n");
    }
    // The call tree, depth first, each node written with its depth-first
    // position as id.
    let mut stack: Vec<(u32, bool)> = plan.cnode_roots.iter().rev().map(|&n| (n, false)).collect();
    while let Some((n, done)) = stack.pop() {
        if done {
            s.push_str("</cnode>\n");
            continue;
        }
        let _ = writeln!(
            s,
            "<cnode id=\"{}\" calleeId=\"{}\">",
            plan.deep_position[n as usize], c.cnodes[n as usize].region.0
        );
        stack.push((n, true));
        stack.extend(plan.cnode_children[n as usize].iter().rev().map(|&k| (k, false)));
    }
    s.push_str("</program>\n<system>\n");
    let mut ids = SystemIds::default();
    for &n in &plan.node_roots {
        system_node(&mut s, c, plan, n, &mut ids);
    }
    s.push_str("</system>\n</cube>\n");
    s
}

impl Plan {
    fn metric_roots(&self) -> Vec<u32> {
        // Roots are the metrics that are no one's child, in order.
        let mut child = vec![false; self.metric_children.len()];
        for kids in &self.metric_children {
            for &k in kids {
                child[k as usize] = true;
            }
        }
        (0..self.metric_children.len() as u32).filter(|&m| !child[m as usize]).collect()
    }
}

fn metric(s: &mut String, c: &Cube, plan: &Plan, m: u32) {
    let d = &c.metrics[m as usize];
    let _ = writeln!(s, "<metric id=\"{}\" type=\"{}\">", plan.metric_id[m as usize], d.kind.name());
    element(s, "disp_name", &d.display_name);
    element(s, "uniq_name", &d.unique_name);
    element(s, "dtype", d.data_type.name());
    element(s, "uom", &d.unit);
    element(s, "url", &d.url);
    element(s, "descr", &d.description);
    for &k in &plan.metric_children[m as usize] {
        metric(s, c, plan, k);
    }
    s.push_str("</metric>\n");
}

/// The next ids of the system tree's elements, in the order written.
#[derive(Default)]
struct SystemIds {
    node: u32,
    group: u32,
}

fn system_node(s: &mut String, c: &Cube, plan: &Plan, n: u32, ids: &mut SystemIds) {
    let d = &c.nodes[n as usize];
    let _ = writeln!(s, "<systemtreenode Id=\"{}\">", ids.node);
    ids.node += 1;
    element(s, "name", &d.name);
    element(s, "class", &d.class);
    for (k, v) in &d.attributes {
        attr(s, k, v);
    }
    for &g in &plan.node_groups[n as usize] {
        let locations = &plan.group_locations[g as usize];
        // The format has no empty location group.
        if locations.is_empty() {
            continue;
        }
        let gd = &c.groups[g as usize];
        let _ = writeln!(s, "<locationgroup Id=\"{}\">", ids.group);
        ids.group += 1;
        element(s, "name", &gd.name);
        element(s, "rank", &gd.rank.to_string());
        element(s, "type", gd.ty.name());
        for &l in locations {
            let ld = &c.locations[l as usize];
            let _ = writeln!(s, "<location Id=\"{}\">", plan.location_column[l as usize]);
            element(s, "name", &ld.name);
            element(s, "rank", &ld.rank.to_string());
            element(s, "type", ld.ty.name());
            s.push_str("</location>\n");
        }
        s.push_str("</locationgroup>\n");
    }
    for &k in &plan.node_children[n as usize] {
        system_node(s, c, plan, k, ids);
    }
    s.push_str("</systemtreenode>\n");
}

fn element(s: &mut String, tag: &str, text: &str) {
    let _ = writeln!(s, "<{tag}>{}</{tag}>", escape(text));
}

fn attr(s: &mut String, key: &str, value: &str) {
    let _ = writeln!(s, "<attr key=\"{}\" value=\"{}\"/>", escape(key), escape(value));
}

/// `text` as XML character data or attribute value: markup characters as
/// entities, and the control characters XML 1.0 cannot hold as U+FFFD.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(ch),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

//! Writing a cube: the `.cubex` archive (`anchor.xml`, then each metric's
//! data and index files) to a stream, or atomically to a path.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::plan::Plan;
use crate::{Cube, Error, MetricKind, Result, tar, xml};

impl Cube {
    /// Writes the `.cubex` archive to `out`.
    pub fn write(&self, out: &mut impl Write) -> Result<()> {
        if self.metrics.is_empty() {
            return Err(Error::Empty("metric"));
        }
        if self.cnodes.is_empty() {
            return Err(Error::Empty("call-tree node"));
        }
        if self.locations.is_empty() {
            return Err(Error::Empty("location"));
        }
        let plan = Plan::of(self);
        let anchor = xml::anchor(self, &plan);
        let mut tar = tar::Writer::new(out);
        tar.file("anchor.xml", anchor.as_bytes())?;
        for (m, def) in plan.metric_order.iter().map(|&m| (m, &self.metrics[m as usize])) {
            let positions = if def.kind == MetricKind::Inclusive { &plan.wide_position } else { &plan.deep_position };
            // (position, cnode) of the rows with a nonzero value.
            let mut rows: Vec<(u32, usize)> = def
                .rows
                .iter()
                .enumerate()
                .filter(|(_, r)| r.iter().any(|&v| v != 0))
                .map(|(c, _)| (positions[c], c))
                .collect();
            if rows.is_empty() {
                let first = positions.iter().position(|&p| p == 0).expect("position 0 exists");
                rows.push((0, first));
            }
            rows.sort_unstable();
            let id = plan.metric_id[m as usize];
            let mut index = Vec::with_capacity(22 + 4 * rows.len());
            index.extend_from_slice(b"CUBEX.INDEX");
            index.extend_from_slice(&1u32.to_le_bytes());
            index.extend_from_slice(&0u16.to_le_bytes());
            index.push(1); // sparse: the rows are listed
            index.extend_from_slice(&(rows.len() as u32).to_le_bytes());
            for &(p, _) in &rows {
                index.extend_from_slice(&p.to_le_bytes());
            }
            let n = self.locations.len();
            let size = 10 + (rows.len() * n * 8) as u64;
            let data = tar.begin(&format!("{id}.data"), size)?;
            data.write_all(b"CUBEX.DATA")?;
            let mut line = vec![0u8; n * 8];
            for &(_, c) in &rows {
                line.fill(0);
                for (l, &v) in def.rows.get(c).into_iter().flatten().enumerate() {
                    let column = plan.location_column[l] as usize;
                    line[column * 8..column * 8 + 8].copy_from_slice(&v.to_le_bytes());
                }
                data.write_all(&line)?;
            }
            tar.end(size)?;
            tar.file(&format!("{id}.index"), &index)?;
        }
        tar.finish()?;
        Ok(())
    }

    /// Writes the `.cubex` archive to `path`, atomically: into a
    /// temporary file beside it, renamed over `path` once complete. On
    /// failure nothing is left behind (a file already at `path` stays as
    /// it was). Returns the file's size.
    pub fn write_to(&self, path: &Path) -> Result<u64> {
        let fail = |source| Error::Write { path: path.to_path_buf(), source };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let temp = dir.join(format!(".{name}.{}.part", std::process::id()));
        let file = std::fs::OpenOptions::new().write(true).create_new(true).open(&temp).map_err(fail)?;
        let written = (|| -> Result<u64> {
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            self.write(&mut out)?;
            let file = out.into_inner().map_err(|e| Error::Io(e.into_error()))?;
            file.sync_all()?;
            let size = file.metadata()?.len();
            drop(file);
            std::fs::rename(&temp, path)?;
            Ok(size)
        })();
        written.map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            match e {
                Error::Io(source) => fail(source),
                e => e,
            }
        })
    }
}

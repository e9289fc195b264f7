//! Static files served by the event loop itself (`--static URL_PREFIX=DIRECTORY`), without
//! Python: the I/O half. Every decision (is the path safe, which representation, Range,
//! conditional requests, the answer's status and fields) is the proto crate's `files` module;
//! this module only opens and stats the file and hands out the protocol-neutral answer with
//! the file's bytes ([`Own`]), which HTTP/1.1 queues for `sendfile(2)` through the
//! connection's output queue ([`Own::queue_h1`]) and HTTP/2 sends as DATA frames
//! (`h2/own_answer.rs`), so memory stays flat whatever the file size and a slow download holds
//! no thread.
//!
//! Opening is confined to the mount (`static_open`): neither `..` nor a symlink can leave it,
//! unless the mount has `follow-symlinks`.
//!
//! A small file without precompressed siblings is kept in memory after its first answer
//! (`static_cache`) and answered from there, head and bytes in one `writev` (from 16 KiB, over
//! plain HTTP/1.1: the head, then `sendfile` from a sealed memory copy kept with it), until inotify
//! reports a change on its path. Other files are opened per request, as nginx does without
//! `open_file_cache`, so a change on disk is seen at once either way. Only the absence of
//! precompressed siblings is remembered for them, checked against the directory's change time
//! on every request (`static_siblings`).

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};

use sluicegate_proto::answer::{Answer, AnswerBody, ServerFields};
use sluicegate_proto::files::{
    plan, plan_not_found, plan_redirect_to_slash, resolve, BodyRange, FileMeta, MountOptions,
    PlanScratch, Representations, Resolved, StaticPlan,
};
use sluicegate_proto::h1::response::{encode_answer, OwnAnswer};
use sluicegate_proto::RequestHead;

use super::out_queue::{OutQueue, CORK_MIN};
use super::static_cache::{self, Cached, FileCache};
use super::static_expires::StaticExpires;
use super::static_open::{open_beneath, open_dir};
use super::static_siblings::SiblingCache;
use crate::config::{ExpiresConfig, MountConfig};
use crate::http_date::{http_date, unix_now};
use crate::observe::table::StaticCacheReadings;
use sluicegate_proto::date::{format_http_date, HTTP_DATE_LEN};

/// One mount, ready to serve.
struct Mount {
    prefix: Vec<u8>,
    dir: OwnedFd,
    opts: MountOptions,
    follow_symlinks: bool,
    siblings: SiblingCache,
    /// The directory as configured (absolute): `--static-expires` matches under it.
    directory: Vec<u8>,
    /// `;fallthrough` (or `--static-fallthrough`): no file here -> the app.
    fallthrough: bool,
}

/// All static mounts of a server.
pub struct StaticFiles {
    /// Longest prefix first, so `/static/img` wins over `/static`.
    mounts: Vec<Mount>,
    /// `--static-expires`, `--static-expires-uri`.
    expires: StaticExpires,
    /// Small files kept in memory, for all mounts (by their index in `mounts`).
    cache: FileCache,
}

/// An answer the loop gives itself (a static file, the health path), for any protocol to
/// frame: proto's protocol-neutral answer, the Date it was decided at, and the bytes of its
/// file body when it has one.
pub struct Own<'a> {
    pub answer: &'a Answer<'a>,
    pub date: &'a [u8; HTTP_DATE_LEN],
    /// The file an `AnswerBody::File` range is read from (`None`: no file body).
    pub file: Option<FileBytes>,
    /// `--static-expires`: the `Expires` date of this answer (HTTP/1.1 writes it).
    pub expires: Option<[u8; HTTP_DATE_LEN]>,
}

/// A static file's bytes, as the loop holds them.
pub enum FileBytes {
    /// The kept copy of a file without siblings (`static_cache`).
    Memory(Cached),
    /// The open file (the chosen representation), sent with `sendfile`.
    Disk(File),
}

impl Own<'_> {
    /// Queue the file body's range in `out` (a slice of the kept copy, or a `sendfile` range:
    /// of a kept file too, when it kept its descriptor and the caller writes to a plain socket,
    /// `sendfile_ok`); `false`: the answer has none.
    pub fn queue_file(self, out: &mut OutQueue, sendfile_ok: bool) -> bool {
        let (AnswerBody::File { range, .. }, Some(file)) = (self.answer.body, self.file) else {
            return false;
        };
        let BodyRange { offset, len } = range;
        match file {
            FileBytes::Memory(Cached { file: Some(f), .. })
                if sendfile_ok && len >= static_cache::SENDFILE_FROM =>
            {
                out.push_shared_file(f, offset, len)
            }
            FileBytes::Memory(cached) => out.push_shared(cached.slice(offset, len)),
            FileBytes::Disk(f) => out.push_file(f, offset, len),
        }
        true
    }

    /// Frame the answer as HTTP/1.1 to `head` and queue it in `out`: the head (and a text
    /// body) in one buffer, then the file range; a large file's head and first bytes corked
    /// into full segments. `server`: the Server header's value; `plain`: the connection is
    /// not TLS (a kept file may go out with `sendfile`); `extra`: `--add-header`'s lines.
    pub fn queue_h1(
        self,
        head: &RequestHead,
        (server, extra): (&[u8], &[u8]),
        plain: bool,
        out: &mut OutQueue,
    ) -> OwnAnswer {
        let mut buf = Vec::with_capacity(512);
        let with_expires;
        let extra = match &self.expires {
            None => extra,
            Some(date) => {
                with_expires = [extra, b"Expires: ", date, b"\r\n"].concat();
                &with_expires
            }
        };
        let fields = ServerFields {
            date: self.date,
            server,
            extra,
        };
        let mut answer = encode_answer(head, self.answer, &fields, &mut buf);
        let cork =
            matches!(self.answer.body, AnswerBody::File { range, .. } if range.len >= CORK_MIN);
        if cork {
            out.push_cork(true);
        }
        out.push_owned(buf);
        if matches!(self.answer.body, AnswerBody::File { .. }) && !self.queue_file(out, plain) {
            answer.body_bytes = 0;
        }
        if cork {
            out.push_cork(false);
        }
        answer
    }
}

/// What one `fstat` says an opened name is.
enum Kind {
    Regular(FileMeta),
    Directory,
    Other,
}

/// The kind of an opened file, and a regular file's metadata, from one `fstat`.
fn kind_of(f: &File) -> Kind {
    // SAFETY: an all-zero stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: f is open; st is a valid out-pointer.
    if unsafe { libc::fstat(f.as_raw_fd(), &mut st) } != 0 {
        return Kind::Other;
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => Kind::Regular(FileMeta {
            size: st.st_size as u64,
            mtime_secs: st.st_mtime,
            mtime_nanos: st.st_mtime_nsec as u32,
            inode: st.st_ino,
        }),
        libc::S_IFDIR => Kind::Directory,
        _ => Kind::Other,
    }
}

/// Regular-file metadata, or None for anything else.
fn regular_meta(f: &File) -> Option<FileMeta> {
    match kind_of(f) {
        Kind::Regular(meta) => Some(meta),
        _ => None,
    }
}

/// Where a planned answer's body comes from.
enum Bodies {
    /// The files on disk (the identity and its precompressed siblings), sent with `sendfile`.
    Disk {
        identity: File,
        br: Option<File>,
        gz: Option<File>,
    },
    /// The kept copy of a file without siblings (`static_cache`).
    Memory(Cached),
}

impl StaticFiles {
    /// Open every mount's directory. An unreadable directory is a startup error.
    pub fn new(
        mounts: &[MountConfig],
        fallthrough: bool,
        expires: &[ExpiresConfig],
    ) -> Result<Option<StaticFiles>, String> {
        if mounts.is_empty() {
            return Ok(None);
        }
        let mut out = Vec::new();
        for m in mounts {
            let dir = open_dir(&m.directory)
                .map_err(|e| format!("--static {}={}: {e}", m.prefix, m.directory))?;
            let opts = MountOptions {
                allow_dotfiles: m.dotfiles,
                index: m.index.as_ref().map(|i| i.as_bytes().into()),
                max_age: m.max_age,
                immutable: m.immutable,
            };
            opts.validate()
                .map_err(|e| format!("--static {}={}: {e}", m.prefix, m.directory))?;
            // A root mount "/" is an empty prefix for matching purposes.
            let prefix = if m.prefix == "/" {
                Vec::new()
            } else {
                m.prefix.as_bytes().to_vec()
            };
            out.push(Mount {
                prefix,
                dir,
                opts,
                follow_symlinks: m.follow_symlinks,
                siblings: SiblingCache::default(),
                directory: m.directory.as_bytes().to_vec(),
                fallthrough: fallthrough || m.fallthrough,
            });
        }
        out.sort_by_key(|m| std::cmp::Reverse(m.prefix.len()));
        Ok(Some(StaticFiles {
            cache: FileCache::new(out.len()),
            mounts: out,
            expires: StaticExpires::new(expires)?,
        }))
    }

    /// What the kept files hold now, and how often they answered.
    pub fn cache_readings(&self) -> StaticCacheReadings {
        self.cache.readings()
    }

    /// The answer to `head` if it is under a mount, handed to `frame` (each protocol frames
    /// it its own way); `None`: not under any mount (or no file and fallthrough is on), the
    /// app answers.
    pub fn serve<R>(&self, head: &RequestHead, frame: impl FnOnce(Own<'_>) -> R) -> Option<R> {
        let path = head.path();
        for (i, m) in self.mounts.iter().enumerate() {
            let found = match resolve(&m.prefix, path, &m.opts) {
                Resolved::NotMounted => continue,
                Resolved::Refused(_) => Lookup::NotFound,
                Resolved::File(rp) => {
                    let found = self.find(i, rp.as_bytes());
                    return self.answer(head, found, (rp.file_name(), m, rp.as_bytes()), frame);
                }
            };
            return self.answer(head, found, (b"", m, b""), frame);
        }
        None
    }

    /// Plan the answer to what was found (proto's `plan`), dated now, and hand it to `frame`
    /// with the chosen representation's bytes (from disk, `sendfile`, or from memory).
    fn answer<R>(
        &self,
        head: &RequestHead,
        found: Lookup,
        (file_name, m, rel): (&[u8], &Mount, &[u8]),
        frame: impl FnOnce(Own<'_>) -> R,
    ) -> Option<R> {
        let opts = &m.opts;
        let date = http_date();
        let mut scratch = PlanScratch::default();
        let mut file = None;
        let p = match found {
            Lookup::NotFound if m.fallthrough => return None,
            Lookup::NotFound => plan_not_found(head),
            Lookup::Redirect => plan_redirect_to_slash(head, &mut scratch),
            Lookup::File(reps, bodies) => {
                let p = plan(head, file_name, &reps, opts, &date, &mut scratch);
                file = chosen_bytes(&p, bodies);
                p
            }
        };
        let expires = if self.expires.is_empty() || !matches!(p.answer.status, 200 | 206) {
            None
        } else {
            let path = || [&m.directory[..], b"/", rel].concat();
            self.expires
                .seconds(path, head.target())
                .map(|s| format_http_date(unix_now().saturating_add(s)))
        };
        Some(frame(Own {
            answer: &p.answer,
            date: &date,
            file,
            expires,
        }))
    }

    /// What the file `rel` of the mount `i` is: its kept copy if current, else from disk (kept
    /// on the way when it qualifies, `static_cache`).
    fn find(&self, i: usize, rel: &[u8]) -> Lookup {
        let m = &self.mounts[i];
        let dir = m.dir.as_raw_fd();
        if let Some(cached) = self.cache.lookup(i, rel) {
            return Lookup::File(
                Representations::identity(cached.meta),
                Bodies::Memory(cached),
            );
        }
        let Some(file) = open_beneath(dir, rel, m.follow_symlinks) else {
            return Lookup::NotFound;
        };
        let identity = match kind_of(&file) {
            Kind::Regular(meta) => meta,
            // A directory named without its trailing '/': redirect to the '/' form (whose
            // index, if any, is then served), as nginx does, so that relative links in the
            // index page resolve under the directory.
            Kind::Directory => return Lookup::Redirect,
            Kind::Other => return Lookup::NotFound,
        };
        // Precompressed siblings are looked for on every request, whatever the client
        // accepts: their existence alone makes the answer vary on Accept-Encoding. A file
        // recorded without any, in a directory unchanged since, skips the two opens
        // (`static_siblings`).
        let dir_stamp = SiblingCache::stamp(dir, rel);
        let none_known = dir_stamp.is_some_and(|st| m.siblings.none_known(rel, st));
        let sibling = |suffix: &[u8]| -> Option<(File, FileMeta)> {
            if none_known {
                return None;
            }
            let mut rel = rel.to_vec();
            rel.extend_from_slice(suffix);
            let f = open_beneath(dir, &rel, m.follow_symlinks)?;
            let meta = regular_meta(&f)?;
            Some((f, meta))
        };
        let br = sibling(b".br");
        let gz = sibling(b".gz");
        if let (Some(st), false) = (dir_stamp, none_known) {
            if br.is_none() && gz.is_none() {
                m.siblings.record_none(rel, st);
            } else {
                m.siblings.forget(rel);
            }
        }
        let small = identity.size <= static_cache::FILE_MAX;
        if small && br.is_none() && gz.is_none() {
            if let Some(cached) = self.cache.fill(i, dir, rel) {
                return Lookup::File(
                    Representations::identity(cached.meta),
                    Bodies::Memory(cached),
                );
            }
        }
        let reps = Representations {
            identity,
            br: br.as_ref().map(|(_, m)| *m),
            gzip: gz.as_ref().map(|(_, m)| *m),
        };
        let bodies = Bodies::Disk {
            identity: file,
            br: br.map(|(f, _)| f),
            gz: gz.map(|(f, _)| f),
        };
        Lookup::File(reps, bodies)
    }
}

/// What a request under a mount looked up.
enum Lookup {
    /// A regular file, with the representations that exist and where their bytes are.
    File(Representations, Bodies),
    /// A directory named without its trailing '/'.
    Redirect,
    /// Nothing to serve (refused, missing, not a regular file).
    NotFound,
}

/// The bytes of the planned answer's file body, if it has one: the representation it chose.
fn chosen_bytes(p: &StaticPlan<'_>, bodies: Bodies) -> Option<FileBytes> {
    let AnswerBody::File { encoding, .. } = p.answer.body else {
        return None;
    };
    match bodies {
        Bodies::Memory(cached) => Some(FileBytes::Memory(cached)),
        Bodies::Disk { identity, br, gz } => match encoding.file_suffix() {
            b".br" => br,
            b".gz" => gz,
            _ => Some(identity),
        }
        .map(FileBytes::Disk),
    }
}

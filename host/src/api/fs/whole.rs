//! Whole-file operations: write a file of a given size, read one to its
//! end, copy one (read/write or copy_file_range).

use super::{bs_arg, buf_err, read_some, write_all, OpenOptions, Transfer, MAX_IO};
use crate::api::{os_err, ApiError, Host};
use crate::buffer::AlignedBuf;
use std::os::fd::AsRawFd;
use std::time::Instant;

impl Host {
    /// Writes a whole file of `size` bytes in blocks of `bs`, then optionally fsyncs.
    pub fn write_file(
        &mut self,
        path: &str,
        size: u64,
        bs: u64,
        direct: bool,
        fsync: bool,
    ) -> Result<Transfer, ApiError> {
        let bs = bs_arg("write_file", bs)?.max(512);
        let t = Instant::now();
        // Charge first: a refused write leaves the file as it was.
        self.charge("write_file", size)?;
        let opened = self.open(
            path,
            OpenOptions {
                write: true,
                create: true,
                truncate: true,
                direct,
                ..Default::default()
            },
        );
        let mut f = match opened {
            Ok(f) => f,
            Err(e) => {
                // Nothing was written: the reservation goes back.
                self.refund(size);
                return Err(e);
            }
        };
        let fd = f.fd("write_file")?;
        let mut done = 0;
        while done < size {
            self.check()?;
            let n = (size - done).min(bs);
            done += f.write_block(fd, Some(done), done, n)?;
        }
        if fsync {
            f.fdatasync()?;
        }
        Ok(Transfer {
            bytes: done,
            seconds: t.elapsed().as_secs_f64(),
        })
    }

    /// Reads a whole file in blocks of `bs`.
    pub fn read_file(&mut self, path: &str, bs: u64, direct: bool) -> Result<Transfer, ApiError> {
        let bs = bs_arg("read_file", bs)?.max(512);
        let t = Instant::now();
        let mut f = self.open(
            path,
            OpenOptions {
                read: true,
                direct,
                ..Default::default()
            },
        )?;
        let mut done = 0u64;
        loop {
            self.check()?;
            let r = f.read_at(done, bs)?;
            if r == 0 {
                break;
            }
            done += r;
        }
        Ok(Transfer {
            bytes: done,
            seconds: t.elapsed().as_secs_f64(),
        })
    }

    /// Copies a file with read/write in blocks of `bs`, or with
    /// copy_file_range; at most the source's size when the copy started
    /// (what the budget was charged for) is copied.
    pub fn copy(
        &mut self,
        src: &str,
        dst: &str,
        method: &str,
        bs: u64,
    ) -> Result<Transfer, ApiError> {
        if !matches!(method, "copy_file_range" | "read-write") {
            return Err(ApiError::Invalid(format!(
                "copy: method '{method}' is not one of read-write, copy_file_range"
            )));
        }
        let bs = bs_arg("copy", bs)?;
        let t = Instant::now();
        let from = self.run_dir().open(src, libc::O_RDONLY, 0)?;
        let size = self.run_dir().stat(src)?.size;
        self.charge("copy", size)?;
        let to = self
            .run_dir()
            .open(dst, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644)?;
        let (from_fd, to_fd) = (from.as_raw_fd(), to.as_raw_fd());
        let mut done = 0u64;
        if method == "copy_file_range" {
            while done < size {
                self.check()?;
                // SAFETY: valid descriptors; null offsets use the file positions.
                let r = unsafe {
                    libc::copy_file_range(
                        from_fd,
                        std::ptr::null_mut(),
                        to_fd,
                        std::ptr::null_mut(),
                        (size - done).min(1 << 30) as usize,
                        0,
                    )
                };
                if r < 0 {
                    return Err(os_err(format!("copy '{src}' to '{dst}'"))(
                        std::io::Error::last_os_error(),
                    ));
                }
                if r == 0 {
                    break;
                }
                done += r as u64;
            }
        } else {
            let bs = bs.clamp(4096, MAX_IO).min(size.max(4096)) as usize;
            let mut buf = AlignedBuf::zeroed(bs).map_err(buf_err("copy"))?;
            while done < size {
                self.check()?;
                let want = (size - done).min(bs as u64) as usize;
                let chunk = buf.prefix_mut(want).map_err(buf_err("copy"))?;
                let r = read_some(from_fd, chunk, None, &format!("copy: read '{src}'"))?;
                if r == 0 {
                    break;
                }
                // r <= chunk.len().
                let data = &chunk[..r as usize];
                write_all(to_fd, data, None, &format!("copy: write '{dst}'"))?;
                done += r;
            }
        }
        Ok(Transfer {
            bytes: done,
            seconds: t.elapsed().as_secs_f64(),
        })
    }
}

//! The container a server runs in, as knobs: `container_memory` ("512MiB"), `container_cpus`
//! ("1.5") and `container_swap` ("0"). They are webtune's, not the server's: the launch puts
//! the server's whole process tree in a cgroup with these limits (`sys::cgroup`), and the
//! recommendation gives them as a Kubernetes `resources:` block and `docker run` flags. Being
//! knobs, they sweep and rightsize like any other (the smallest container that serves).

use crate::input::{self, format_decimal};
use crate::sys::cgroup::Limits;

/// The knobs, in the order the recommendation names them.
pub const MEMORY: &str = "container_memory";
pub const CPUS: &str = "container_cpus";
pub const SWAP: &str = "container_swap";
pub const KNOBS: [&str; 3] = [MEMORY, CPUS, SWAP];

/// The smallest CPU quota the kernel takes (1 ms per 100 ms period).
const MIN_CPUS: f64 = 0.01;
/// The smallest memory limit that can hold any server webtune starts.
const MIN_MEMORY: u64 = 8 << 20;

/// Whether `name` is one of the container's knobs.
pub fn is_knob(name: &str) -> bool {
    KNOBS.contains(&name)
}

/// The knob's value, judged.
pub fn check(name: &str, value: &str) -> Result<(), String> {
    match name {
        CPUS => cpus(value).map(|_| ()),
        MEMORY => input::size_bytes(name, value).map_err(|e| e.0).and_then(|b| {
            if b < MIN_MEMORY {
                Err(format!(
                    "{name} = {value:?}: at least {} (a server needs some memory)",
                    input::format_bytes(MIN_MEMORY)
                ))
            } else {
                Ok(())
            }
        }),
        _ => input::size_bytes(name, value).map(|_| ()).map_err(|e| e.0),
    }
}

fn cpus(value: &str) -> Result<f64, String> {
    let c: f64 = value.trim().parse().map_err(|_| format!("{CPUS} = {value:?}: a number of CPUs, e.g. 0.5 or 2"))?;
    if !(MIN_CPUS..=4096.0).contains(&c) {
        return Err(format!("{CPUS} = {value:?}: between {MIN_CPUS} and 4096 CPUs"));
    }
    Ok(c)
}

/// The limits `values` ask for (none when they set no container knob). Values were checked.
pub fn limits(values: &[(String, String)]) -> Limits {
    let get = |k: &str| values.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    Limits {
        memory: get(MEMORY).and_then(|v| input::size_bytes(MEMORY, v).ok()),
        swap: get(SWAP).and_then(|v| input::size_bytes(SWAP, v).ok()),
        cpus: get(CPUS).and_then(|v| cpus(v).ok()),
        ..Limits::default()
    }
}

/// `values` without the container's knobs: what the server's own configuration gets.
pub fn server_values(values: &[(String, String)]) -> Vec<(String, String)> {
    values.iter().filter(|(k, _)| !is_knob(k)).cloned().collect()
}

/// The container of `values` as Kubernetes resources and `docker run` flags; None when they
/// set no container knob. Requests equal limits: the size was measured as the pod's whole
/// budget, and a request below it would let the scheduler pack the pod where it cannot grow.
pub fn recommend(values: &[(String, String)]) -> Option<String> {
    let l = limits(values);
    if l.memory.is_none() && l.cpus.is_none() {
        return None;
    }
    let mut k8s = Vec::new();
    let mut docker = Vec::new();
    if let Some(c) = l.cpus {
        let milli = (c * 1000.0).round() as u64;
        k8s.push(format!("cpu: \"{milli}m\""));
        docker.push(format!("--cpus {}", format_decimal(c)));
    }
    if let Some(m) = l.memory {
        k8s.push(format!("memory: \"{}\"", kubernetes_quantity(m)));
        docker.push(format!("--memory {}", docker_size(m)));
        // Docker's --memory-swap is memory plus swap; equal to --memory means no swap.
        docker.push(format!("--memory-swap {}", docker_size(m + l.swap.unwrap_or(0))));
    }
    let block: String = k8s.iter().map(|l| format!("\n#       {l}")).collect();
    Some(format!(
        "# container (Kubernetes):\n#   resources:\n#     requests:{block}\n#     limits:{block}\n\
         # container (Docker): docker run {} ...",
        docker.join(" ")
    ))
}

/// Bytes as Kubernetes writes them: "512Mi", "1536Mi", "2Gi".
fn kubernetes_quantity(bytes: u64) -> String {
    for (unit, size) in [("Gi", 1u64 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
        if bytes.is_multiple_of(size) {
            return format!("{}{unit}", bytes / size);
        }
    }
    bytes.to_string()
}

/// Bytes as `docker run --memory` takes them: "512m", "2g", "1536k".
fn docker_size(bytes: u64) -> String {
    for (unit, size) in [("g", 1u64 << 30), ("m", 1 << 20), ("k", 1 << 10)] {
        if bytes.is_multiple_of(size) {
            return format!("{}{unit}", bytes / size);
        }
    }
    format!("{bytes}b")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_knobs_become_limits_and_leave_the_servers_values() {
        let values = v(&[("workers", "4"), (MEMORY, "512MiB"), (CPUS, "1.5")]);
        let l = limits(&values);
        assert_eq!((l.memory, l.cpus, l.swap), (Some(512 << 20), Some(1.5), None));
        assert_eq!(server_values(&values), v(&[("workers", "4")]));
    }

    #[test]
    fn bad_sizes_are_refused_with_the_knob_named() {
        assert!(check(CPUS, "0").unwrap_err().starts_with("container_cpus = \"0\""));
        assert!(check(CPUS, "lots").is_err());
        assert!(check(MEMORY, "1MiB").unwrap_err().contains("at least 8MiB"));
        assert!(check(MEMORY, "512").is_err());
        assert!(check(MEMORY, "1.5GiB").is_ok());
    }

    #[test]
    fn the_recommendation_speaks_kubernetes_and_docker() {
        let r = recommend(&v(&[(MEMORY, "1536MiB"), (CPUS, "0.5")])).unwrap();
        assert!(r.contains("#       cpu: \"500m\"\n#       memory: \"1536Mi\""), "{r}");
        assert!(r.contains("#     limits:\n#       cpu: \"500m\""), "{r}");
        assert!(r.ends_with("docker run --cpus 0.5 --memory 1536m --memory-swap 1536m ..."), "{r}");
        assert_eq!(recommend(&v(&[("workers", "4")])), None);
    }
}

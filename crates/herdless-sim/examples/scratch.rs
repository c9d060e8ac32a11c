use herdless_sim::*;
fn main() {
    let sc: Scenario = std::env::args()
        .nth(1)
        .unwrap_or("outage".into())
        .parse()
        .unwrap();
    let t = std::time::Instant::now();
    let r = Simulation::new(Config::default_for(sc)).run().unwrap();
    eprintln!("wall {:?}", t.elapsed());
    println!("{}", r.table());
    let t = std::time::Instant::now();
    let files = plots::write_all(&r, std::path::Path::new("/tmp/hr")).unwrap();
    eprintln!("plots {:?} {files:?}", t.elapsed());
}

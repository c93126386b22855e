/**
 * Topology (seed: "topology"): what is known of where every process of the world runs. Today
 * that is its host name, exchanged at bootstrap; groups derive their node-local members and node
 * leaders from it once, at creation (seed: "group": build node-leader subgroups up front).
 */
export class Topology {
  constructor(readonly hosts: readonly string[]) {}

  sameHost(a: number, b: number): boolean {
    return this.hosts[a] === this.hosts[b];
  }

  /** Distinct hosts, in order of their first process. */
  get hostCount(): number {
    return new Set(this.hosts).size;
  }
}

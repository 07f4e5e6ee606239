// The relay's counters and gauges, rendered as Prometheus text. Labels are bounded: a stream (made by
// the operator), an error code, a refusal reason, the version; never a connection, a node or an address.

/** What a connection reports for the lag gauges: its stream (once past hello) and the last seq it was sent. */
export type ConnectionGauge = { stream: string | null; sentSeq(): number };

function label(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function bump(map: Map<string, number>, key: string, by = 1): void {
  map.set(key, (map.get(key) ?? 0) + by);
}

/** Counters kept in memory for this process; heads come from storage at scrape time. */
export class RelayMetrics {
  private readonly opsIn = new Map<string, number>();
  private readonly duplicates = new Map<string, number>();
  private readonly opsOut = new Map<string, number>();
  private readonly rejects = new Map<string, number>();
  private readonly refused = new Map<string, number>();
  private readonly live = new Set<ConnectionGauge>();
  private accepted = 0;

  /** `version` is the package version, shown as `nexus_build_info{version}`. */
  constructor(private readonly version: string) {}

  connected(conn: ConnectionGauge): void {
    this.live.add(conn);
    this.accepted += 1;
  }

  disconnected(conn: ConnectionGauge): void {
    this.live.delete(conn);
  }

  /** Forgets a deleted stream's series, so they do not outlive it. */
  forgetStream(stream: string): void {
    for (const m of [this.opsIn, this.duplicates, this.opsOut]) m.delete(stream);
  }

  /** Ops of a push: `stored` new ones, `duplicate` dropped by id. */
  pushed(stream: string, stored: number, duplicate: number): void {
    bump(this.opsIn, stream, stored);
    if (duplicate > 0) bump(this.duplicates, stream, duplicate);
  }

  /** Ops sent to one consumer. */
  sent(stream: string, count: number): void {
    bump(this.opsOut, stream, count);
  }

  /** A pushed op refused as not storable (protocol/storable.ts), by reason. */
  refusedOp(reason: string): void {
    bump(this.refused, reason);
  }

  /** A connection refused or closed with a coded error. */
  rejected(code: string): void {
    bump(this.rejects, code);
  }

  /** The Prometheus text exposition (format 0.0.4). */
  render(heads: Array<{ name: string; head: number }>): string {
    const out: string[] = [];
    const family = (name: string, type: 'counter' | 'gauge', help: string, rows: Array<[string, number]>) => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const [labels, value] of rows) out.push(`${name}${labels} ${value}`);
    };
    const byStream = (m: Map<string, number>) => [...m].map(([s, v]): [string, number] => [`{stream="${label(s)}"}`, v]);
    family('nexus_build_info', 'gauge', 'The running relay: always 1, its version as a label.', [[`{version="${label(this.version)}"}`, 1]]);
    family('nexus_relay_connections', 'gauge', 'Open sync connections.', [['', this.live.size]]);
    family('nexus_relay_connections_accepted_total', 'counter', 'Sync connections accepted.', [['', this.accepted]]);
    family('nexus_relay_ops_in_total', 'counter', 'Ops stored from pushes.', byStream(this.opsIn));
    family('nexus_relay_ops_duplicate_total', 'counter', 'Pushed ops dropped as duplicates by id.', byStream(this.duplicates));
    family('nexus_relay_ops_out_total', 'counter', 'Ops sent to consumers.', byStream(this.opsOut));
    family('nexus_relay_ops_refused_total', 'counter', 'Pushed ops refused as not storable, by reason; never stored.', [...this.refused].map(([r, v]): [string, number] => [`{reason="${label(r)}"}`, v]));
    family('nexus_relay_rejects_total', 'counter', 'Connections closed with a coded error, by code.', [...this.rejects].map(([c, v]): [string, number] => [`{code="${label(c)}"}`, v]));
    family('nexus_relay_stream_head', 'gauge', 'The last seq of each stream.', heads.map((h): [string, number] => [`{stream="${label(h.name)}"}`, h.head]));
    const head = new Map(heads.map((h) => [h.name, h.head]));
    const perStream = new Map<string, { conns: number; maxLag: number }>();
    for (const c of this.live) {
      if (c.stream === null) continue;
      const s = perStream.get(c.stream) ?? { conns: 0, maxLag: 0 };
      s.conns += 1;
      s.maxLag = Math.max(s.maxLag, (head.get(c.stream) ?? 0) - c.sentSeq());
      perStream.set(c.stream, s);
    }
    const rows = (pick: (s: { conns: number; maxLag: number }) => number) =>
      [...perStream].map(([stream, s]): [string, number] => [`{stream="${label(stream)}"}`, pick(s)]);
    family('nexus_relay_stream_connections', 'gauge', 'Open sync connections past hello, by stream.', rows((s) => s.conns));
    family('nexus_relay_stream_lag_max', 'gauge', 'Ops committed on the stream and not yet sent to its most lagging connection.', rows((s) => Math.max(0, s.maxLag)));
    return out.join('\n') + '\n';
  }
}

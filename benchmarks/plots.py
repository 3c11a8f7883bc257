"""The suite's plots: one PNG per suite from its results (`plot`)."""

from __future__ import annotations

from pathlib import Path

from suites_data import _rate


def plot(suite: str, data: dict, path: Path) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    if suite == "longtail" and data:
        alphas = list(data)
        systems = sorted({s for rows in data.values() for s in rows}, key=lambda s: list(data[alphas[0]]).index(s)
                         if s in data[alphas[0]] else 99)
        w = 0.8 / max(1, len(systems))
        for i, s in enumerate(systems):
            ys = [data[a].get(s, {}).get("end_to_end_s", 0) / data[a][next(iter(data[a]))]["ideal_s"] for a in alphas]
            ax.bar([j + i * w for j in range(len(alphas))], ys, w, label=s)
        ax.set_xticks([j + w * (len(systems) - 1) / 2 for j in range(len(alphas))], [f"alpha={a}" for a in alphas])
        ax.set_ylabel("end to end / ideal")
        ax.legend()
    elif suite == "ablation" and data.get("ray"):
        names = list(data["ray"])
        ax.barh(names, [data["ray"][n]["execution_s"] / data["ray"][n]["ideal_s"] for n in names])
        ax.set_xlabel("execution / ideal (Ray, alpha 1.1)")
    elif suite == "suppression" and data:
        names = list(data)
        ax.bar(names, [data[n]["kept_out"] / data[n]["doomed"] for n in names])
        ax.set_ylabel("doomed siblings kept out of the stage")
    elif suite == "overhead" and data.get("local"):
        sh = data["local"]["shapes"]
        ax.plot([r["levels"] for r in sh["depth"]], [r["us_per_grain"] for r in sh["depth"]], "o-", label="depth (levels)")
        ax2 = ax.twiny()
        ax2.semilogx([r["fanout"] for r in sh["fanout"]], [r["us_per_grain"] for r in sh["fanout"]], "s--", color="C1",
                     label="fan-out (2 levels)")
        ax.set_xlabel("hierarchy levels")
        ax2.set_xlabel("children per parent")
        ax.set_ylabel("microseconds per grain")
        ax.legend(loc="upper left")
        ax2.legend(loc="upper right")
    elif suite == "realwork" and data:
        names, ys = [], []
        for workload, rows in (data.get("pdf") or {}).items():
            for r in rows:
                names.append(f"pdf {workload}: {r['system']}")
                ys.append(r["vs_loop"])
        for r in (data.get("video") or {}).get("rows", []):
            names.append(f"video: {r['system']}")
            ys.append(r["vs_loop"])
        ax.barh(names, ys)
        ax.axvline(1.8, color="k", ls="--", lw=0.8)
        ax.set_xlabel("throughput / sequential loop")
    elif suite == "pdfquality" and data.get("quality"):
        rows = [r for r in data["quality"] if "rates" in r]
        kinds = [k for k in ("present", "absent", "order", "table", "math", "baseline", "overall")
                 if any(k in r["rates"] for r in rows)]
        w = 0.8 / max(1, len(rows))
        for i, r in enumerate(rows):
            ax.bar([j + i * w for j in range(len(kinds))], [_rate(r["rates"], k) or 0 for k in kinds], w,
                   label=r["system"])
        ax.set_xticks([j + w * (len(rows) - 1) / 2 for j in range(len(kinds))], kinds)
        ax.set_ylabel("pass rate")
        ax.set_ylim(0, 1.05)
        ax.legend()
    elif suite == "simulation" and data.get("scale"):
        g = [r["gpus"] for r in data["scale"]]
        ax.semilogx(g, [r["util_of_ideal"] for r in data["scale"]], "o-", base=2, label="share of ideal utilisation")
        ax.set_xlabel("GPUs")
        ax.set_ylim(0, 1.05)
        ax2 = ax.twinx()
        ax2.loglog(g, [r["headroom"] for r in data["scale"]], "s--", base=2, color="C1", label="driver headroom")
        ax2.set_ylabel("driver rate / needed rate")
        ax.legend(loc="lower left")
        ax2.legend(loc="lower right")
    else:
        plt.close(fig)
        return False
    ax.set_title(suite)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True

// Measures of the live page's layout, for tests/ui/test_ui_layout.py: evaluated in the page
// over the DevTools protocol (which the page's Content-Security-Policy does not govern).
window.layout = (() => {
  const name = (e) => e.id ? "#" + e.id
    : `${e.tagName.toLowerCase()}.${e.className} "${(e.innerText || "").trim().slice(0, 40)}"`;
  const box = (e) => {
    const r = e.getBoundingClientRect();
    return { e, l: r.left, r: r.right, t: r.top + scrollY, b: r.bottom + scrollY };
  };
  const meet = (a, b) => a.l < b.r - 0.5 && b.l < a.r - 0.5 && a.t < b.b - 0.5 && b.t < a.b - 0.5;
  // Where a person would click to reach ``el``: on top there, and whole in the window?
  const shown = (el) => {
    const r = el.getBoundingClientRect();
    const at = document.elementFromPoint(r.left + Math.min(20, r.width / 2), r.top + Math.min(8, r.height / 2));
    const whole = r.top >= -1 && r.bottom <= innerHeight + 1 && r.left >= -1 && r.right <= innerWidth + 1;
    return { whole, onTop: !!at && el.contains(at), rect: [r.left, r.top, r.right, r.bottom], text: el.innerText.slice(0, 60) };
  };

  // Everything wrong with the layout as it stands, as sentences (none: it reads well).
  function problems() {
    const found = [];
    const apart = (els, what) => {
      const bs = els.map(box).filter((x) => x.r > x.l && x.b > x.t);
      for (let i = 0; i < bs.length; i++) {
        for (let j = i + 1; j < bs.length; j++) {
          if (meet(bs[i], bs[j])) found.push(`${what}: ${name(bs[i].e)} overlaps ${name(bs[j].e)}`);
        }
      }
    };
    apart([...document.querySelectorAll("header#top, #banner:not([hidden]), main > .panel")], "panels");
    const lists = new Set();
    const rows = ["#tree > .row", "#holders > .card", "#edits > .wt", "#journal > .ev", ".wt > *",
                  ".card > *", ".card-head > *", ".edit-row > *", ".claims > *", "#counts > *"];
    for (const sel of rows) for (const el of document.querySelectorAll(sel)) lists.add(el.parentElement);
    for (const parent of lists) apart([...parent.children], "rows of " + name(parent));
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth) {
      found.push(`the document is ${root.scrollWidth} px wide in a ${root.clientWidth} px window`);
    }
    for (const panel of document.querySelectorAll("header#top, main > .panel")) {
      if (panel.scrollWidth > panel.clientWidth + 1) {
        found.push(`${name(panel)} scrolls sideways (${panel.scrollWidth} > ${panel.clientWidth})`);
      }
      // What a panel does not scroll, it must hold: else it spills over what lies below.
      if (getComputedStyle(panel).overflowY === "visible" && panel.scrollHeight > panel.clientHeight + 1) {
        found.push(`${name(panel)} spills over its neighbours (${panel.scrollHeight} > ${panel.clientHeight})`);
      }
      for (const el of panel.querySelectorAll("*")) {
        if (![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
        const r = el.getBoundingClientRect(), p = el.parentElement.getBoundingClientRect();
        const css = getComputedStyle(el);
        if (r.width && (r.left < p.left - 0.5 || r.right > p.right + 0.5)) {
          found.push(`${name(el)} runs out of ${name(el.parentElement)}`);
        }
        if (css.overflowX !== "visible" && el.scrollWidth > el.clientWidth + 1) {
          found.push(`${name(el)} is cut (${el.scrollWidth} > ${el.clientWidth})`);
        }
        if (css.overflowY !== "visible" && el.scrollHeight > el.clientHeight + 1 && !el.matches(".panel")) {
          found.push(`${name(el)} is cut in height`);
        }
      }
    }
    return found;
  }

  // Bring the panel's last row into view as a person would (scrolling the page, then the
  // panel): is it then shown, and on top?
  function reach(id) {
    const panel = document.getElementById(id);
    const rows = panel.querySelectorAll(".row, .card, .wt, .edit-row, .ev, h2");
    const last = rows[rows.length - 1];
    last.scrollIntoView({ block: "nearest", inline: "nearest" });
    return { ...shown(last), width: panel.getBoundingClientRect().width };
  }

  // As the page opens: the edits panel's heading and its first red warning.
  function warning() {
    scrollTo(0, 0);
    for (const p of document.querySelectorAll(".panel")) p.scrollTop = 0;
    const row = document.querySelector("#edits .edit-row.bad");
    return { heading: shown(document.querySelector("#edits-panel h2")), row: row && shown(row) };
  }

  return { problems, reach, warning };
})();

// In the page: each visible text of the views with its colour and the colour painted under
// it (HTML backgrounds up to the first opaque one, then, for SVG text, the shapes drawn
// before it that cover its centre, in paint order), each badge against the view around it,
// and the surfaces the views paint. Colours are composited with their alpha and opacity.
// Run by test_theme_browser.py with page.evaluate(source, selector of the views).
(selector) => {
  const probe = document.createElement("canvas").getContext("2d", { willReadFrequently: true });
  function parse(text) {
    if (!text || text === "none" || text.startsWith("url")) return null;
    let m = text.match(/^rgba?\(([^)]*)\)$/);
    if (m) {
      const [r, g, b, a] = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
      return [r, g, b, a ?? 1];
    }
    m = text.match(/^color\(srgb ([^)]*)\)$/);
    if (m) {
      const [r, g, b, a] = m[1].split(/[ /]+/).filter(Boolean).map(Number);
      return [r * 255, g * 255, b * 255, a ?? 1];
    }
    probe.clearRect(0, 0, 1, 1);
    probe.fillStyle = text;
    probe.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = probe.getImageData(0, 0, 1, 1).data;
    return [r, g, b, a / 255];
  }
  const over = (top, below) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + below[i] * (1 - a)).concat(1);
  };
  const withAlpha = (color, alpha) => color && [color[0], color[1], color[2], color[3] * alpha];
  const opacity = (el) => {
    let o = 1;
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) o *= Number(getComputedStyle(n).opacity);
    return o;
  };
  const luminance = (c) => {
    const [r, g, b] = c.slice(0, 3).map((v) => {
      const s = v / 255;
      return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };
  const css = (c) => `rgb(${c.slice(0, 3).map(Math.round).join(", ")})`;

  // HTML: the backgrounds from el up to the first opaque one, composited
  function backdrop(el) {
    const layers = [];
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c && c[3] > 0) {
        layers.push(withAlpha(c, opacity(n)));
        if (c[3] >= 1) break;
      }
    }
    return layers.reverse().reduce((below, top) => over(top, below), [255, 255, 255, 1]);
  }
  // SVG: the svg's backdrop, then each filled shape painted before `until` (or `until`
  // itself, with `inclusive`) that covers the point
  function painted(svgEl, until, x, y, inclusive) {
    let color = backdrop(svgEl.parentElement);
    for (const shape of svgEl.querySelectorAll("rect, circle, ellipse, path, polygon")) {
      if (shape.closest("defs, marker")) continue;
      const before = shape.compareDocumentPosition(until) & Node.DOCUMENT_POSITION_FOLLOWING;
      if (!before && !(inclusive && shape === until)) continue;
      const box = shape.getBoundingClientRect();
      if (x < box.left || x > box.right || y < box.top || y > box.bottom) continue;
      const style = getComputedStyle(shape);
      const fill = parse(style.fill);
      if (!fill || style.visibility !== "visible") continue;
      color = over(withAlpha(fill, Number(style.fillOpacity) * opacity(shape)), color);
    }
    return color;
  }
  const visible = (el) => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && el.checkVisibility({ visibilityProperty: true });
  };
  const describe = (el, text) => {
    const view = el.closest(".na-state, .na-timeline, .na-chat, .na-graph, .na-context-table, .na-voice, .na-suite, .na-failed-expectation, .na-waterfall, .na-bench, .na-table-box").classList[0];
    const name = (n) => (n.getAttribute("class") || n.tagName.toLowerCase()).split(" ").join(".");
    const dot = (n) => (n.getAttribute("class") ? "." : "") + name(n);
    return `${view} ${dot(el.parentElement)} ${dot(el)} "${text.trim().replace(/\s+/g, " ").slice(0, 28)}"`;
  };

  const texts = [];
  function addText(el, text, style, background, large) {
    const color = parse(style.color);
    if (!color || !text.trim()) return;
    const fg = over(withAlpha(color, opacity(el)), background);
    const size = parseFloat(style.fontSize);
    const bold = Number(style.fontWeight) >= 600;
    const badge = Boolean(el.closest(".na-badge"));
    texts.push({
      what: describe(el, text),
      ratio: ratio(fg, background),
      need: badge || size >= 24 || (size >= 18.66 && bold) || large ? 3 : 4.5,
      fg: css(fg),
      bg: css(background),
    });
  }
  const roots = [...document.querySelectorAll(selector)].filter(visible);
  for (const root of roots) {
    for (const el of [root, ...root.querySelectorAll("*")]) {
      if (!visible(el)) continue;
      if (el instanceof SVGElement) {
        if (el.tagName !== "text") continue;
        const box = el.getBoundingClientRect();
        const background = painted(el.ownerSVGElement, el, box.x + box.width / 2, box.y + box.height / 2, false);
        const style = getComputedStyle(el);
        addText(el, el.textContent, { color: style.fill, fontSize: style.fontSize, fontWeight: style.fontWeight }, background);
        continue;
      }
      const own = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join("");
      const background = backdrop(el);
      if (own.trim()) addText(el, own, getComputedStyle(el), background);
      if (el.tagName === "INPUT" && el.type === "text") {
        addText(el, el.value || "typed text", getComputedStyle(el), background);
        if (!el.value && el.placeholder) addText(el, el.placeholder, getComputedStyle(el, "::placeholder"), background);
      }
      for (const pseudo of ["::before", "::after"]) {
        const style = getComputedStyle(el, pseudo);
        const content = style.content;
        if (content && content !== "none" && content !== "normal" && content !== '""') {
          addText(el, `${pseudo}${content}`, style, background);
        }
      }
    }
  }

  // a badge's pill against the view around it (non-text contrast, WCAG 1.4.11)
  const badges = [...document.querySelectorAll(".na-badge")].filter(visible).map((el) => {
    const pill = over(withAlpha(parse(getComputedStyle(el).backgroundColor), opacity(el)), backdrop(el.parentElement));
    const around = backdrop(el.parentElement);
    return { what: describe(el, el.textContent), ratio: ratio(pill, around), pill: css(pill), bg: css(around) };
  });

  // the surfaces the views paint, and what is under each view
  const surfaces = [];
  for (const root of roots) surfaces.push({ what: `${root.classList[0]} (view)`, color: backdrop(root) });
  for (const el of document.querySelectorAll(
    ".na-toolbar button, .na-chat-send, .na-chat-input, .na-transcript, .na-context, .na-wf-pick",
  )) {
    if (visible(el)) surfaces.push({ what: describe(el, el.textContent || el.tagName), color: backdrop(el) });
  }
  for (const el of document.querySelectorAll(".na-lane-bg, .na-node:not(.na-current) rect, .na-edge-backdrop")) {
    if (!visible(el)) continue;
    const box = el.getBoundingClientRect();
    const where = el.closest(".na-lane, .na-node, .na-edge");
    const name = where.dataset.agent || where.dataset.id || where.dataset.tool || "";
    surfaces.push({
      what: `${el.closest(".na-timeline, .na-graph").classList[0]} .${el.getAttribute("class") || "na-node rect"} ${name}`,
      color: painted(el.ownerSVGElement, el, box.x + box.width / 2, box.y + box.height / 2, true),
    });
  }
  return {
    views: roots.length,
    texts,
    badges,
    surfaces: surfaces.map(({ what, color }) => ({ what, luminance: luminance(color), color: css(color) })),
  };
}

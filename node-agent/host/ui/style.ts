// The dashboard's one stylesheet: system colours in both schemes, sizes in rem so 200% zoom reflows
// instead of overflowing, and a focus ring that is always visible.
export const CSS = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1b1f;--muted:#55555f;--line:#cfcfd8;--card:#f5f5f8;--link:#0b57d0;--warn:#7a4100;--warn-bg:#fff1db;--bad:#a1231b;--bad-bg:#fde6e4;--ok:#12652b;--ok-bg:#e3f5e8;--focus:#0b57d0}
@media (prefers-color-scheme:dark){:root{--bg:#131418;--fg:#e7e7eb;--muted:#b0b0bb;--line:#3b3c44;--card:#1e1f25;--link:#9cc1ff;--warn:#ffc36e;--warn-bg:#3b2a0f;--bad:#ffb4aa;--bad-bg:#46120d;--ok:#8fe0a5;--ok-bg:#0f3219;--focus:#9cc1ff}}
*{box-sizing:border-box}
html{font-size:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:1rem/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;overflow-wrap:anywhere}
a{color:var(--link)}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.skip{position:absolute;left:-999rem;top:0}
.skip:focus{left:1rem;background:var(--bg);padding:.5rem 1rem;z-index:2}
.vh{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
header.top{border-bottom:1px solid var(--line);background:var(--card)}
header.top .in,main,footer{max-width:78rem;margin:0 auto;padding:.75rem 1rem}
header.top .in{display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;align-items:center}
.brand{font-weight:700;margin:0;font-size:1.1rem}
nav ul{list-style:none;display:flex;flex-wrap:wrap;gap:.25rem 1rem;margin:0;padding:0}
nav a{display:inline-block;padding:.25rem .1rem;text-decoration:none;font-weight:600}
nav a[aria-current=page]{text-decoration:underline;text-underline-offset:.3em;text-decoration-thickness:.15em}
.count{display:inline-block;min-width:1.5em;padding:0 .4em;border-radius:1em;background:var(--bad-bg);color:var(--bad);text-align:center;font-size:.9em}
.count[data-n="0"]{background:var(--ok-bg);color:var(--ok)}
h1{font-size:1.6rem;margin:.5rem 0 1rem}
h2{font-size:1.25rem;margin:1.5rem 0 .5rem}
h3{font-size:1.05rem;margin:1rem 0 .4rem}
.meta{color:var(--muted);font-size:.95rem;margin:.15rem 0}
.tag{display:inline-block;border:1px solid currentColor;border-radius:.3rem;padding:0 .35rem;font-size:.85rem;font-weight:600;white-space:nowrap}
.tag.bad{color:var(--bad);background:var(--bad-bg)}
.tag.warn{color:var(--warn);background:var(--warn-bg)}
.tag.ok{color:var(--ok);background:var(--ok-bg)}
.tag.plain{color:var(--muted)}
ol.needs,ul.plain{list-style:none;margin:0;padding:0}
.card{background:var(--card);border:1px solid var(--line);border-radius:.5rem;padding:.75rem 1rem;margin:0 0 .9rem}
.card h2{margin:0 0 .25rem;font-size:1.1rem}
.card h4{margin:0 0 .25rem;font-size:1rem}
.text{white-space:pre-wrap;margin:.5rem 0;padding:.5rem .75rem;border-left:.25rem solid var(--line);background:var(--bg)}
form.reply,form.withdraw{display:grid;gap:.35rem;margin-top:.6rem;max-width:48rem}
form.reply .as,form.withdraw .as{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}
button.danger{border-color:var(--bad);background:var(--bad)}
label{font-weight:600}
textarea,input[type=text]{font:inherit;color:inherit;background:var(--bg);border:1px solid var(--muted);border-radius:.3rem;padding:.4rem .5rem;max-width:100%}
textarea{width:100%;min-height:4.5rem}
button{font:inherit;font-weight:600;padding:.35rem 1rem;border-radius:.3rem;border:1px solid var(--link);background:var(--link);color:var(--bg);cursor:pointer;justify-self:start}
.notice{padding:.6rem .9rem;border-radius:.4rem;margin:0 0 1rem;border:1px solid}
.notice.ok{color:var(--ok);background:var(--ok-bg)}
.notice.bad{color:var(--bad);background:var(--bad-bg)}
details.op{border:1px solid var(--line);border-radius:.5rem;margin:0 0 .6rem;padding:.35rem .75rem}
details.op>summary{cursor:pointer;padding:.2rem 0}
ul.tree{list-style:none;margin:.3rem 0 .3rem;padding-left:0}
ul.tree ul.tree{padding-left:1.25rem;border-left:2px solid var(--line);margin-left:.3rem}
ul.tree li>.row{padding:.2rem 0}
.marks{display:inline-flex;flex-wrap:wrap;gap:.25rem;vertical-align:middle}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:.4rem 0}
dl.kv dt{font-weight:600}
dl.kv dd{margin:0}
dl.extras{display:flex;flex-wrap:wrap;gap:.1rem .6rem;margin:.2rem 0;font-size:.9rem}
dl.extras dt{font-weight:600}
dl.extras dd{margin:0}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.95rem}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
ol.messages{list-style:none;padding:0;margin:0}
code,abbr{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em}
abbr{text-decoration:none}
footer{color:var(--muted);font-size:.9rem;border-top:1px solid var(--line);margin-top:2rem}
@media (max-width:40rem){dl.kv{grid-template-columns:1fr}dl.kv dd{margin-bottom:.3rem}}
`;

// The dashboard's own script, two pieces of stream plumbing.

// A log stream starts with the log's tail each time it (re)connects, so the log on
// the page is emptied as the stream opens.
document.addEventListener("htmx:sseOpen", function (e) {
  if (e.target && e.target.classList.contains("logs")) {
    e.target.replaceChildren();
  }
});

// A live region's stream does not send what the page shows already (seen= in its
// address names it). The address is kept naming what the page shows now: a stream
// that htmx opens again after a close starts from it, and sends any change made
// while it was closed.
document.addEventListener("htmx:sseMessage", function (e) {
  var el = e.target, id = e.detail && e.detail.lastEventId;
  var url = el && el.getAttribute && el.getAttribute("sse-connect");
  if (id && url && /[?&]seen=/.test(url)) {
    el.setAttribute("sse-connect", url.replace(/([?&]seen=)[^&]*/, "$1" + encodeURIComponent(id)));
  }
});

// Renders /openapi.yaml with Swagger UI, served from this binary (no CDN,
// no validator badge: nothing leaves the page's origin).
(function () {
  if (!window.SwaggerUIBundle) {
    document.getElementById('missing').hidden = false;
    return;
  }
  window.SwaggerUIBundle({ url: '/openapi.yaml', dom_id: '#docs', validatorUrl: null, deepLinking: true });
})();

// Renders the server's own OpenAPI document with the vendored Swagger UI (no network).
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/docs/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    validatorUrl: null, // no call to validator.swagger.io: the page works offline
  });
});

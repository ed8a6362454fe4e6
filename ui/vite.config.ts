// Vite config for the webview UI: fixed dev port (tauri.conf.json devUrl), no CDN assets.
import { defineConfig } from "vite";

export default defineConfig({
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  build: { target: "es2022", outDir: "dist", emptyOutDir: true },
});

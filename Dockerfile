# kubemedic's image: `kubemedic run`, `kubemedic guard serve` and `kubemedic agent` (deploy/).
#
#   docker build -t kubemedic .
#
# Three stages: the wheels (kubemedic and its dependencies, built where a compiler may be
# needed), systemctl with only the libraries it links (the node agent restarts and inspects the
# host's units through systemd's socket; the rest of the systemd package is not needed), and the
# slim runtime. No kubectl: kubemedic talks to the API itself; only a drift source that is a
# Kustomize directory needs it (docs/deploy.md, "The image").
ARG PYTHON=python:3.11.11-slim-bookworm

FROM ${PYTHON} AS wheels
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM ${PYTHON} AS systemctl
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Debian stable's updates of systemd are its security fixes: take the current one.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends systemd \
    && rm -rf /var/lib/apt/lists/*
# /usr/bin/systemctl and the shared objects it links (libsystemd-shared among them), under
# their real directories (/lib is a link to /usr/lib on bookworm).
RUN mkdir -p /out \
    && for file in /usr/bin/systemctl $(ldd /usr/bin/systemctl | awk '$3 ~ /^\// {print $3}'); do \
         dir="/out$(readlink -f "$(dirname "$file")")"; \
         mkdir -p "$dir" && cp -L "$file" "$dir/$(basename "$file")"; \
       done

FROM ${PYTHON}
LABEL org.opencontainers.image.title="kubemedic" \
      org.opencontainers.image.description="Keeps Kubernetes clusters healthy and remembers what went wrong." \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=systemctl /out/ /
RUN --mount=type=bind,from=wheels,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels /wheels/kubemedic-*.whl \
    && systemctl --version \
    && groupadd --system --gid 10001 kubemedic \
    && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
       --shell /usr/sbin/nologin kubemedic
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# run and guard run as this user; the agent's DaemonSet runs it as root (uid 0), whose
# sockets (systemd's private one, the CRI runtime's) it needs.
USER 10001:10001
WORKDIR /tmp
ENTRYPOINT ["kubemedic"]
CMD ["--help"]

import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { Image, ImageSpec, ImageStatusResponse } from "../../../src/cri_client/api.ts";
import type { ImageManagerService } from "../../../src/cri_client/runtime_service.ts";
import { getImageUser } from "../../../src/kubelet/kuberuntime/helpers.ts";

function fakeImages(
  images: Record<string, Partial<Image>>,
): Pick<ImageManagerService, "imageStatus"> {
  return {
    imageStatus: (spec: ImageSpec): Promise<ImageStatusResponse> => {
      const found = images[spec.image];
      return Promise.resolve({
        image: found && {
          id: `sha256:${spec.image}`,
          repoTags: [spec.image],
          repoDigests: [],
          size: 1n,
          username: "",
          pinned: false,
          ...found,
        },
        info: {},
      });
    },
  };
}

Deno.test("TestGetImageUser", async (t) => {
  const images = fakeImages({
    "test-image-ref1": { uid: { value: 1000n } },
    "test-image-ref2": { username: "test" },
    "test-image-ref3": {},
    "test-image-ref4": { uid: { value: 0n }, username: "root" },
  });
  const cases: {
    description: string;
    image: string;
    want: Awaited<ReturnType<typeof getImageUser>>;
  }[] = [
    {
      description: "image user is a number: its uid",
      image: "test-image-ref1",
      want: { uid: 1000, username: "" },
    },
    {
      description: "image user is a name: the name, no uid",
      image: "test-image-ref2",
      want: { uid: undefined, username: "test" },
    },
    { description: "no user: root", image: "test-image-ref3", want: { uid: 0, username: "" } },
    {
      description: "a uid and a name: the uid wins",
      image: "test-image-ref4",
      want: { uid: 0, username: "" },
    },
    {
      description: "an image the runtime does not have: root",
      image: "missing",
      want: { uid: 0, username: "" },
    },
  ];
  for (const c of cases) {
    await t.step(c.description, async () => {
      assertEquals(await getImageUser(images, c.image), c.want);
    });
  }
});
